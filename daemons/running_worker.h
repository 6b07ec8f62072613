// What a running ringside-worker owns, and the helpers its lifecycle shares. Internal to the
// worker daemon.
#ifndef RINGSIDE_DAEMONS_RUNNING_WORKER_H_
#define RINGSIDE_DAEMONS_RUNNING_WORKER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "daemons/worker_daemon.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "ring/allreduce.h"
#include "ring/ring_member.h"

namespace ringside::worker {

// Everything a running worker owns; members are destroyed in reverse order, so the gRPC server
// stops before the ring member whose service it runs.
struct RunningWorker {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Metrics metrics{registry};
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<ring::RingMember> member;  // ring mode only
  StartedServer server;
};

// Workers in the job: the ring's peers, or --workers in ps mode.
int WorldOf(const WorkerOptions& options);
// Writes --params_out (raw float32) atomically (nothing when it is empty).
absl::Status WriteParameters(const WorkerOptions& options, absl::Span<const float> parameters);

}  // namespace ringside::worker

#endif  // RINGSIDE_DAEMONS_RUNNING_WORKER_H_
