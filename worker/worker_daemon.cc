#include "worker/worker_daemon.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "worker/training_worker.h"

namespace ringside::worker {

int WorldOf(const WorkerOptions& options) {
  return options.mode == SyncMode::kRing ? static_cast<int>(options.peers.size()) : options.workers;
}

absl::Status ValidateWorkerOptions(const WorkerOptions& options) {
  RETURN_IF_ERROR(ValidateSegmentBytes(options.segment_bytes));
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout must be positive");
  }
  if (options.training.steps < 1) return absl::InvalidArgumentError("--steps must be >= 1");
  RETURN_IF_ERROR(ModelSpec::Parse(options.training.model, options.training.activation).status());
  if (!options.member.controller.empty()) return ValidateElasticOptions(options);
  const bool ring = options.mode == SyncMode::kRing;
  const std::vector<std::string>& addresses = ring ? options.peers : options.ps;
  if (addresses.empty()) {
    return absl::InvalidArgumentError(
        ring ? "--peers: give every worker's RingPeer address, e.g. "
               "--peers=127.0.0.1:7001,127.0.0.1:7002 (the same list, in rank order, on every "
               "worker)"
             : "--ps: give every parameter-server shard's address, in shard order");
  }
  for (const std::string& address : addresses) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(address).status(), ring ? "--peers" : "--ps"));
  }
  if (!ring && options.workers < 1) {
    return absl::InvalidArgumentError("--workers: ps mode needs the number of workers");
  }
  const int world = WorldOf(options);
  if (options.rank < 0 || options.rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank=", options.rank, " is not in [0, ", world, ")",
                     ring ? ", the ranks --peers names" : ", the ranks --workers allows"));
  }
  return absl::OkStatus();
}

absl::Status RunWorker(const WorkerOptions& options, const TerminationSignals& signals,
                       std::ostream& log) {
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  return RunTrainingWorker(options, signals, log);
}

}  // namespace ringside::worker
