// `ringside up`: a local cluster kept running for Prometheus and Grafana until a signal.
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

namespace ringside::cli {

using launch::LocalCluster;
using launch::LocalClusterOptions;

absl::Status RunUp(const UpOptions& options, const TerminationSignals& signals, std::ostream& out) {
  std::unique_ptr<TempDir> temp;
  std::string dir = options.cluster.work_dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(TempDir made, TempDir::Create("ringside-up-"));
    temp = std::make_unique<TempDir>(std::move(made));
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
  ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster, LocalCluster::Start(cluster_options));
  nlohmann::json processes = nlohmann::json::array();
  out << "ringside up: controller at " << cluster->controller_address() << ", logs in " << dir
      << "\n";
  for (auto& process : cluster->processes()) {
    out << "  " << process->name << " (pid " << process->process.pid() << ")  "
        << process->metrics_url() << "\n";
    processes.push_back({{"name", process->name},
                         {"pid", process->process.pid()},
                         {"metrics_url", process->metrics_url()}});
  }
  out << "switch modes with: ringside ctl mode ring|ps --controller="
      << cluster->controller_address()
      << "\nadd a worker with: " << absl::StrJoin(cluster->WorkerCommand("worker-added"), " ")
      << "\nCtrl-C stops every process.\n";
  out.flush();
  if (!options.ready_file.empty()) {
    const nlohmann::json ready = {{"controller", cluster->controller_address()},
                                  {"processes", processes}};
    RETURN_IF_ERROR(WriteFileAtomically(options.ready_file, ready.dump() + "\n"));
  }
  while (!signals.WaitFor(absl::Milliseconds(200))) {
    // A lost worker is the elastic demo: the controller re-forms the ring without it.
    for (const std::string& lost : cluster->TakeLostWorkerReports()) {
      out << "ringside up: lost " << lost << "; the others go on without it (add one with the "
          << "command above)\n";
      out.flush();
    }
    if (std::optional<std::string> dead = cluster->DeadChild()) {
      return absl::AbortedError(absl::StrCat("a process of the cluster died: ", *dead));
    }
  }
  cluster->Stop();
  return absl::OkStatus();
}

}  // namespace ringside::cli
