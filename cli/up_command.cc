// `ringside up`: a local cluster kept running for Prometheus and Grafana until a signal.
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/compare_prediction.h"
#include "common/file_util.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/usable_cores.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

namespace ringside::cli {

using launch::LocalCluster;
using launch::LocalClusterOptions;

namespace {

// --ready_file: the controller's address, the flags a client needs, and every process's name,
// pid, gRPC address (what `ringside health --address` checks) and metrics URL; written again after
// a restart, so it names every server's current pid.
// --predicted_step_seconds for every worker: the step model's ring and ps steps of this cluster.
absl::StatusOr<std::vector<std::string>> PredictedStepFlags(const UpOptions& options) {
  const int workers = options.cluster.workers;
  const int shards = options.cluster.ps_shards;
  const TrainingOptions& job = options.job;
  const double host_cores = UsableCores();  // every process of `up` runs on this host
  ASSIGN_OR_RETURN(
      const StepPrediction ring,
      PredictJobStep(*options.predicted_costs, job, PlanMode::kRing, workers, shards, host_cores));
  const PlanMode ps_mode = job.staleness > 0        ? PlanMode::kPsStaleness
                           : job.backup_workers > 0 ? PlanMode::kPsBackup
                                                    : PlanMode::kPs;
  ASSIGN_OR_RETURN(const StepPrediction ps, PredictJobStep(*options.predicted_costs, job, ps_mode,
                                                           workers, shards, host_cores));
  return std::vector<std::string>{
      absl::StrCat("--predicted_step_seconds=ring=", ring.step_seconds, ",ps=", ps.step_seconds)};
}

absl::Status WriteReadyFile(LocalCluster& cluster, const std::string& path) {
  nlohmann::json processes = nlohmann::json::array();
  for (auto& process : cluster.processes()) {
    processes.push_back({{"name", process->name},
                         {"pid", process->process.pid()},
                         {"grpc_address", absl::StrCat(process->host, ":", process->port)},
                         {"metrics_url", process->metrics_url()}});
  }
  // How a client reaches the cluster: every flag `ringside ctl` and `health` need besides
  // --controller/--address (the operator's certificate or --insecure, and the operator token).
  const nlohmann::json ready = {{"controller", cluster.controller_address()},
                                {"client_flags", cluster.CtlFlags()},
                                {"processes", processes}};
  return WriteFileAtomically(path, ready.dump() + "\n");
}

// Until a signal: reports every worker lost and every server restarted, each with the last lines
// of its log, and sets `ended` when there was one. A crash loop ends it.
absl::Status KeepRunning(LocalCluster& cluster, const UpOptions& options,
                         const std::string& add_worker, const TerminationSignals& signals,
                         std::ostream& out, bool& ended) {
  while (!signals.WaitFor(absl::Milliseconds(200))) {
    // A lost worker is the elastic demo: the controller re-forms the ring without it.
    for (const launch::ProcessEnd& lost : cluster.TakeLostWorkerReports()) {
      ended = true;
      out << "ringside up: lost " << lost.Summary()
          << "; the others go on without it (add one with: " << add_worker << ")\n"
          << lost.Tail() << "\n";
      out.flush();
    }
    // A lost controller or shard comes back at its address; a crash loop ends `up`.
    const absl::Status restarted = cluster.RestartDeadServers();
    const std::vector<std::string> restarts = cluster.TakeRestartReports();
    ended = ended || !restarted.ok() || !restarts.empty();
    RETURN_IF_ERROR(restarted);
    for (const std::string& restart : restarts) out << "ringside up: " << restart << "\n";
    out.flush();
    if (!restarts.empty() && !options.ready_file.empty()) {
      RETURN_IF_ERROR(WriteReadyFile(cluster, options.ready_file));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunUp(const UpOptions& options, const TerminationSignals& signals, std::ostream& out) {
  std::unique_ptr<launch::TempDir> temp;
  std::string dir = options.cluster.work_dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(launch::TempDir made, launch::TempDir::Create("ringside-up-"));
    temp = std::make_unique<launch::TempDir>(std::move(made));
    dir = temp->path();
  }
  LocalClusterOptions cluster_options;
  cluster_options.bin_dir = options.cluster.bin_dir;
  cluster_options.dir = dir;
  cluster_options.workers = options.cluster.workers;
  cluster_options.ps_shards = options.cluster.ps_shards;
  cluster_options.mode = options.mode;
  cluster_options.training = options.job;
  cluster_options.heartbeat_timeout = options.cluster.heartbeat_timeout;
  cluster_options.checkpoint_dir = options.cluster.checkpoint_dir;
  cluster_options.checkpoint_every = options.cluster.checkpoint_every;
  cluster_options.restart_servers = true;  // what an orchestrator does for a pod that dies
  cluster_options.tls = options.cluster.tls;
  if (options.predicted_costs.has_value()) {
    ASSIGN_OR_RETURN(cluster_options.worker_flags, PredictedStepFlags(options));
  }
  absl::StatusOr<std::unique_ptr<LocalCluster>> started = LocalCluster::Start(cluster_options);
  if (!started.ok()) {
    if (temp != nullptr) temp->Keep();  // the error names a log in it
    return started.status();
  }
  std::unique_ptr<LocalCluster> cluster = *std::move(started);
  out << "ringside up: "
      << (options.job.steps >= kUntilStoppedSteps
              ? std::string("training until stopped (Ctrl-C)")
              : absl::StrCat("training ", options.job.steps, " steps"))
      << ", " << SyncModeName(options.mode) << " mode\n";
  out << "ringside up: controller at " << cluster->controller_address() << ", logs in " << dir
      << (options.cluster.tls ? ", mutual TLS (throw-away CA and certificates in " + dir + "/tls)"
                              : ", plaintext (--insecure)")
      << "\n";
  if (!options.cluster.checkpoint_dir.empty()) {
    out << "  controller checkpoints in " << options.cluster.checkpoint_dir << "\n";
  }
  for (auto& process : cluster->processes()) {
    out << "  " << process->name << " (pid " << process->process.pid() << ")  "
        << process->metrics_url() << "\n";
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> worker_command,
                   cluster->WorkerCommand("worker-added"));
  const std::string add_worker = absl::StrJoin(worker_command, " ");
  const SyncMode other = options.mode == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
  out << "switch modes with: " << absl::StrJoin(cluster->CtlCommand(other), " ")
      << "\nadd a worker with: " << add_worker
      << "\na controller or shard that dies is restarted at its address; Ctrl-C stops every "
         "process.\n";
  out.flush();
  if (!options.ready_file.empty()) RETURN_IF_ERROR(WriteReadyFile(*cluster, options.ready_file));
  // A process that ended without being asked to keeps the directory, and so its log, on disk.
  bool ended = false;
  const absl::Status status = KeepRunning(*cluster, options, add_worker, signals, out, ended);
  cluster->Stop();
  if (ended && temp != nullptr) {
    temp->Keep();
    out << "ringside up: the cluster's logs are kept in " << dir << "\n";
    out.flush();
  }
  return status;
}

}  // namespace ringside::cli
