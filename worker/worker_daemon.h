// ringside-worker's whole life behind a thin main, one lifecycle for static and elastic clusters:
// serve metrics (and RingPeer when the job has a ring), take generations from the controller
// (--controller) or from the command line (a static cluster is one fresh generation that never
// changes: FixedAssignment), train with the one trainer (worker/elastic_training.h), and write
// the result file, parameters and step trace. An elastic worker then stays in the job
// (heartbeating, serving metrics) until SIGINT/SIGTERM: leaving at once could cut a slower
// peer's last collective short, and `ringside up` keeps a cluster between jobs. A static one
// exits, or with --linger serves metrics until a signal so they can still be scraped.
//
// One job, training: over a static ring (--mode=ring --peers, like an MPI host list), static
// parameter-server shards (--mode=ps --ps), or, with --controller, the elastic job the
// controller assigns. The benchmark ranks are `ringside-bench ring-rank` and `ps-rank`
// (bench/rank_jobs.h).
//
// Result file (--result_file, written atomically): common/cluster_files.h's TrainResultFile.
//
// Errors: INVALID_ARGUMENT for options that do not fit together or an output file that cannot be
// opened (the message names the flag; a join token file that cannot be read gives its own error);
// UNAVAILABLE when a port cannot be bound; the registration's status; CANCELLED when a signal
// stops a static worker before its job ends; otherwise the job's error.
// Thread-compatible.
#ifndef RINGSIDE_WORKER_WORKER_DAEMON_H_
#define RINGSIDE_WORKER_WORKER_DAEMON_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/termination_signals.h"
#include "common/transport_security.h"
#include "server/controller/job_spec.h"
#include "server/ps/ps_client.h"
#include "worker/fault_injection.h"
#include "worker/local_training.h"
#include "worker/worker_outputs.h"

namespace ringside::worker {

// A static cluster's shape, from the command line (--mode, --rank, --peers, --ps, --workers).
// Unused by an elastic worker: the controller assigns all of it.
struct StaticClusterOptions {
  SyncMode mode = SyncMode::kRing;
  int rank = 0;
  std::vector<std::string> peers;  // ring: RingPeer address of every rank, HOST:PORT
  std::vector<std::string> ps;     // ps: ParameterShard address of every shard
  int workers = 0;                 // ps: workers in the job (ring: the number of peers)
  // After the job, serve metrics until SIGINT/SIGTERM (an elastic worker always stays).
  bool linger = false;
};

// How the worker takes part in an elastic job; member.controller empty: a static cluster.
struct ElasticWorkerOptions {
  server::MemberOptions member;  // --controller, --join_token_file, --advertise
  // After a failed step, how long to wait for the controller's next generation.
  absl::Duration regroup_timeout = absl::Seconds(120);
};

// Test-only settings (tests drive the real binary through them; see worker/fault_injection.h).
struct WorkerTestOptions {
  std::optional<FaultPlan> fault;  // --fault_at: SIGKILL at a named protocol point
  // --hold_at: wait after this many steps for a new generation (ElasticOptions); negative: never
  int64_t hold_at = -1;
};

struct WorkerOptions {
  // The job. An elastic worker takes it from the controller, all but training.device.
  TrainingOptions training;
  // Serving and links, in either kind of cluster. `listen`: where RingPeer is served. Empty: a
  // static ring binds peers[rank], a static ps worker serves nothing; an elastic worker needs one.
  std::string listen;
  std::string metrics_listen = "127.0.0.1:0";
  int64_t segment_bytes = int64_t{1} << 20;
  int64_t ps_window_bytes = server::kDefaultPsWindowBytes;  // server::PsClientOptions::window_bytes
  absl::Duration timeout = absl::Seconds(60);  // per collective, ps step or state transfer
  // Of every link: the RingPeer server, the ring stream, the shards, the controller.
  TransportSecurity security;
  // Also serve the link probe (server/probe/link_probe.h) on the `listen` server, to callers
  // presenting the secret in this file, so `ringside plan --probe_targets` measures this
  // worker's link; empty: no probe.
  std::string probe_token_file;
  // ringside_predicted_step_seconds{mode}'s values (--predicted_step_seconds); 0: not exported.
  double predicted_ring_step_seconds = 0, predicted_ps_step_seconds = 0;

  StaticClusterOptions cluster;
  ElasticWorkerOptions elastic;
  WorkerOutputs outputs;
  WorkerTestOptions testing;
};

// Workers in a static cluster: the ring's peers, or --workers in ps mode.
int WorldOf(const StaticClusterOptions& cluster);

absl::Status ValidateWorkerOptions(const WorkerOptions& options);

// Validates `options`, then runs the worker: a static one until its job ends (with
// cluster.linger, until a termination signal after it), an elastic one until a termination
// signal. Progress lines go to `log`.
absl::Status RunWorker(const WorkerOptions& options, const TerminationSignals& signals,
                       std::ostream& log);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_WORKER_DAEMON_H_
