#include "daemons/worker_daemon.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "daemons/benchmark_jobs.h"
#include "daemons/running_worker.h"
#include "daemons/training_worker.h"
#include "model/model_spec.h"
#include "ps/ps_sync.h"
#include "ring/ring_sync.h"
#include "train/data_parallel.h"

namespace ringside::worker {

int WorldOf(const WorkerOptions& options) {
  return options.mode == SyncMode::kRing ? static_cast<int>(options.peers.size()) : options.workers;
}

ring::AllreduceOptions AllreduceOptionsOf(const WorkerOptions& options) {
  ring::AllreduceOptions allreduce;
  allreduce.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  allreduce.timeout = options.timeout;
  allreduce.op = ring::ReduceOp::kSum;
  return allreduce;
}

absl::Status WriteResult(const WorkerOptions& options, const nlohmann::json& result) {
  if (options.result_file.empty()) return absl::OkStatus();
  return WriteFileAtomically(options.result_file, result.dump() + "\n");
}

absl::Status WriteParameters(const WorkerOptions& options, absl::Span<const float> parameters) {
  if (options.params_out.empty()) return absl::OkStatus();
  return WriteFileAtomically(options.params_out,
                             absl::string_view(reinterpret_cast<const char*>(parameters.data()),
                                               parameters.size() * sizeof(float)));
}

absl::StatusOr<WorkerJob> ParseWorkerJob(absl::string_view text) {
  if (text == "allreduce") return WorkerJob::kAllreduce;
  if (text == "pushpull") return WorkerJob::kPushPull;
  if (text == "train") return WorkerJob::kTrain;
  return absl::InvalidArgumentError(
      absl::StrCat("--job: unknown job '", text, "'; expected allreduce, pushpull or train"));
}

absl::Status ValidateWorkerOptions(const WorkerOptions& options) {
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
  if (!ring && options.job == WorkerJob::kAllreduce) {
    return absl::InvalidArgumentError("--job=allreduce needs --mode=ring");
  }
  if (ring && options.job == WorkerJob::kPushPull) {
    return absl::InvalidArgumentError("--job=pushpull needs --mode=ps");
  }
  const int world = WorldOf(options);
  if (options.rank < 0 || options.rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank=", options.rank, " is not in [0, ", world, ")",
                     ring ? ", the ranks --peers names" : ", the ranks --workers allows"));
  }
  if (options.segment_bytes < 4 || options.segment_bytes > kMaxMessageBytes / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segment_bytes must be in [4, ", kMaxMessageBytes / 2, "]"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout must be positive");
  }
  if (options.job != WorkerJob::kTrain) {
    if (options.elements < 0) return absl::InvalidArgumentError("--elements must be >= 0");
    if (options.iters < 1) return absl::InvalidArgumentError("--iters must be >= 1");
    if (options.warmup < 0) return absl::InvalidArgumentError("--warmup must be >= 0");
  } else {
    if (options.training.steps < 1) return absl::InvalidArgumentError("--steps must be >= 1");
    RETURN_IF_ERROR(ModelSpec::Parse(options.training.model, options.training.activation).status());
  }
  return absl::OkStatus();
}

absl::Status RunWorker(const WorkerOptions& options, const TerminationSignals& signals,
                       std::ostream& log) {
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  if (options.job == WorkerJob::kTrain) return RunTrainingWorker(options, signals, log);
  const int world = WorldOf(options);
  const std::string name = WorkerName(options.rank);
  RunningWorker worker;
  ASSIGN_OR_RETURN(worker.metrics_server,
                   MetricsServer::Start(options.metrics_listen, worker.registry));
  std::vector<grpc::Service*> services;
  std::string listen = options.listen;
  if (options.mode == SyncMode::kRing) {
    const ring::RingTopology topology{/*generation=*/1, world, options.rank};
    worker.member = std::make_unique<ring::RingMember>(topology, &worker.metrics);
    services.push_back(worker.member->service());
    if (listen.empty()) listen = options.peers[options.rank];
  }
  if (!listen.empty()) {
    ASSIGN_OR_RETURN(worker.server, StartServer(listen, services));
  }
  worker.metrics.ExportMembership(world, /*generation=*/1, options.mode);
  log << name << ": " << SyncModeName(options.mode) << " mode, "
      << (options.mode == SyncMode::kRing ? absl::StrCat("RingPeer on ", listen, ", ring of ")
                                          : absl::StrCat(options.ps.size(), " shards, "))
      << world << " workers, metrics at " << worker.metrics_server->url() << "\n";
  log.flush();
  if (worker.member != nullptr) RETURN_IF_ERROR(worker.member->Connect(options.peers));

  absl::Status status;
  switch (options.job) {
    case WorkerJob::kAllreduce:
      status = RunAllreduceJob(options, worker, signals, log);
      break;
    case WorkerJob::kPushPull:
      status = RunPushPullJob(options, worker, signals, log);
      break;
    case WorkerJob::kTrain:  // RunTrainingWorker's
      break;
  }
  if (status.ok() && options.linger && !signals.received()) {
    log << name << ": job done; serving metrics until SIGINT/SIGTERM\n";
    log.flush();
    signals.Wait();
  }
  return status;
}

}  // namespace ringside::worker
