#include "launch/local_cluster.h"

#include <signal.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/await_file.h"

namespace ringside::launch {
namespace {

std::string RandomToken() {
  std::random_device device;
  return absl::StrFormat("%08x%08x%08x%08x", device(), device(), device(), device());
}

std::vector<std::string> JobFlags(const worker::TrainingOptions& training) {
  return {"--model=" + training.model,
          "--activation=" + training.activation,
          "--data=" + training.data,
          absl::StrCat("--steps=", training.steps),
          absl::StrCat("--batch_size=", training.batch_size),
          absl::StrCat("--lr=", training.optimizer.learning_rate),
          absl::StrCat("--optimizer=", OptimizerName(training.optimizer.kind)),
          absl::StrCat("--seed=", training.seed)};
}

// The files a worker named `name` writes into the cluster's directory.
struct WorkerFiles {
  WorkerFiles(const std::string& dir, const std::string& name)
      : ready(absl::StrCat(dir, "/", name, ".ready")),
        result(absl::StrCat(dir, "/", name, ".result.json")),
        trace(absl::StrCat(dir, "/", name, ".trace.jsonl")),
        params(absl::StrCat(dir, "/", name, ".params")) {}
  std::string ready, result, trace, params;
};

}  // namespace

std::string ClusterProcess::metrics_url() const {
  return absl::StrCat("http://127.0.0.1:", metrics_port, "/metrics");
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(options));
  cluster->token_file_ = options.dir + "/join-token";
  RETURN_IF_ERROR(WriteFileAtomically(cluster->token_file_, RandomToken() + "\n"));

  std::vector<std::string> argv = {
      options.bin_dir + "/ringside-controller",
      absl::StrCat("--workers=", options.workers),
      absl::StrCat("--ps_shards=", options.ps_shards),
      absl::StrCat("--mode=", SyncModeName(options.mode)),
      "--join_token_file=" + cluster->token_file_,
      absl::StrCat("--heartbeat_timeout=", absl::FormatDuration(options.heartbeat_timeout)),
      "--listen=127.0.0.1:0",
      "--metrics_listen=127.0.0.1:0",
      "--ready_file=" + options.dir + "/controller.ready"};
  for (std::string& flag : JobFlags(options.training)) argv.push_back(std::move(flag));
  ASSIGN_OR_RETURN(ClusterProcess * controller, cluster->Spawn("controller", std::move(argv)));
  RETURN_IF_ERROR(cluster->AwaitReady(*controller, options.dir + "/controller.ready"));
  cluster->controller_address_ = absl::StrCat("127.0.0.1:", controller->port);

  std::vector<std::pair<ClusterProcess*, std::string>> starting;
  for (int s = 0; s < options.ps_shards; ++s) {
    const std::string name = absl::StrCat("ps-", s);
    const std::string ready = absl::StrCat(options.dir, "/", name, ".ready");
    ASSIGN_OR_RETURN(
        ClusterProcess * shard,
        cluster->Spawn(
            name, {options.bin_dir + "/ringside-ps", "--controller=" + cluster->controller_address_,
                   "--join_token_file=" + cluster->token_file_, "--listen=127.0.0.1:0",
                   "--metrics_listen=127.0.0.1:0", "--ready_file=" + ready}));
    starting.emplace_back(shard, ready);
  }
  for (int w = 0; w < options.workers; ++w) {
    ASSIGN_OR_RETURN(ClusterProcess * worker, cluster->AddWorker());
    (void)worker;
  }
  for (auto& [process, ready] : starting) RETURN_IF_ERROR(cluster->AwaitReady(*process, ready));
  return cluster;
}

LocalCluster::~LocalCluster() { Stop(); }

std::vector<std::string> LocalCluster::WorkerCommand(const std::string& name) const {
  const WorkerFiles files(options_.dir, name);
  std::vector<std::string> argv = {
      options_.bin_dir + "/ringside-worker",
      "--controller=" + controller_address_,
      "--join_token_file=" + token_file_,
      "--listen=127.0.0.1:0",
      "--metrics_listen=127.0.0.1:0",
      "--device=" + options_.training.device,
      absl::StrCat("--timeout=", absl::FormatDuration(options_.collective_timeout)),
      "--ready_file=" + files.ready,
      "--result_file=" + files.result,
      "--trace_file=" + files.trace,
      "--params_out=" + files.params};
  for (const std::string& flag : options_.worker_flags) argv.push_back(flag);
  return argv;
}

absl::StatusOr<ClusterProcess*> LocalCluster::AddWorker(
    const std::vector<std::string>& extra_flags) {
  const int index = next_worker_++;
  const std::string name = absl::StrCat("worker-", index);
  const WorkerFiles files(options_.dir, name);
  std::vector<std::string> argv = WorkerCommand(name);
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  if (auto it = options_.flags_of_worker.find(index); it != options_.flags_of_worker.end()) {
    argv.insert(argv.end(), it->second.begin(), it->second.end());
  }
  ASSIGN_OR_RETURN(ClusterProcess * worker, Spawn(name, std::move(argv)));
  worker->result_file = files.result;
  worker->trace_file = files.trace;
  worker->params_file = files.params;
  RETURN_IF_ERROR(AwaitReady(*worker, files.ready));
  return worker;
}

absl::StatusOr<ClusterProcess*> LocalCluster::Spawn(std::string name,
                                                    std::vector<std::string> argv) {
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.log_path = absl::StrCat(options_.dir, "/", name, ".log");
  spawn.term_grace = absl::Seconds(5);
  ASSIGN_OR_RETURN(Subprocess process, Subprocess::Spawn(spawn));
  processes_.push_back(std::make_unique<ClusterProcess>(
      ClusterProcess{std::move(name), std::move(process), 0, 0, {}, {}, {}, false}));
  return processes_.back().get();
}

absl::Status LocalCluster::AwaitReady(ClusterProcess& process, const std::string& ready_file) {
  ASSIGN_OR_RETURN(ReadyFile ready, AwaitReadyFile(process.process, ready_file, process.name,
                                                   options_.start_timeout));
  process.port = ready.port;
  process.metrics_port = ready.metrics_port;
  return absl::OkStatus();
}

std::vector<ClusterProcess*> LocalCluster::workers() {
  std::vector<ClusterProcess*> workers;
  for (auto& process : processes_) {
    if (process->name.rfind("worker-", 0) == 0) workers.push_back(process.get());
  }
  return workers;
}

void LocalCluster::CollectLostWorkers() {
  for (ClusterProcess* worker : workers()) {
    if (worker->expected_to_end || !worker->process.Poll().has_value()) continue;
    worker->expected_to_end = true;
    unreported_losses_.push_back(absl::StrCat(worker->name, " (pid ", worker->process.pid(), ") ",
                                              worker->process.exit_status()->ToString()));
  }
}

std::vector<std::string> LocalCluster::TakeLostWorkerReports() {
  CollectLostWorkers();
  std::vector<std::string> reports;
  reports.swap(unreported_losses_);
  return reports;
}

std::optional<std::string> LocalCluster::DeadChild() {
  for (auto& process : processes_) {
    if (process->expected_to_end || !process->process.Poll().has_value()) continue;
    return absl::StrCat(process->name, " (pid ", process->process.pid(),
                        ") ended: ", process->process.exit_status()->ToString(),
                        "; last lines of its log (", process->process.log_path(), "):\n",
                        TailOfFile(process->process.log_path(), 10));
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<TrainResultFile>> LocalCluster::WaitForResults(
    absl::Duration timeout, const std::function<bool()>& stop) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    CollectLostWorkers();
    if (std::optional<std::string> dead = DeadChild()) return absl::InternalError(*dead);
    std::vector<TrainResultFile> results;
    bool all = true;
    int running = 0;
    for (ClusterProcess* worker : workers()) {
      if (!worker->expected_to_end) ++running;
    }
    if (running == 0) {
      return absl::UnavailableError("no worker is left: every worker of the cluster was lost");
    }
    for (ClusterProcess* worker : workers()) {
      if (worker->expected_to_end) continue;
      absl::StatusOr<std::string> text = ReadFileToString(worker->result_file);
      if (!text.ok()) {
        all = false;
        break;
      }
      absl::StatusOr<TrainResultFile> result = ParseTrainResult(*text);
      if (!result.ok()) {  // written atomically: a bad one is its writer's bug
        return Annotate(result.status(), absl::StrCat(worker->name, "'s ", worker->result_file));
      }
      results.push_back(*std::move(result));
    }
    if (all) return results;
    if (stop && stop()) return absl::CancelledError("stopped before the workers finished");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the workers did not finish within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

void LocalCluster::Stop() {
  // Workers first, so none sees its controller or shards vanish mid-step; in parallel.
  for (const bool workers_pass : {true, false}) {
    for (auto& process : processes_) {
      const bool is_worker = process->name.rfind("worker-", 0) == 0;
      if (is_worker == workers_pass && process->process.running()) {
        process->expected_to_end = true;
        kill(process->process.pid(), SIGTERM);
      }
    }
    for (auto& process : processes_) {
      const bool is_worker = process->name.rfind("worker-", 0) == 0;
      if (is_worker == workers_pass) process->process.Kill();
    }
  }
}

}  // namespace ringside::launch
