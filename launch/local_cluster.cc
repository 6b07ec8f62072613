#include "launch/local_cluster.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "common/usable_cores.h"
#include "launch/await_file.h"
#include "launch/cluster_commands.h"
#include "launch/free_port.h"

namespace ringside::launch {
namespace {

std::string RandomToken() {
  std::random_device device;
  return absl::StrFormat("%08x%08x%08x%08x", device(), device(), device(), device());
}

// How `process` ended (it has), and what its log (by default where it writes it) says last.
ProcessEnd EndOf(const ClusterProcess& process, std::string log = "") {
  ProcessEnd end;
  end.name = process.name;
  end.pid = process.process.pid();
  end.how = process.process.exit_status()->ToString();
  end.log = log.empty() ? process.process.log_path() : std::move(log);
  end.last_lines = QuotedTailOfFile(end.log);
  return end;
}

// How every child of the cluster is run: output to <dir>/<name>.log; the cores shared out among
// the workers' OpenBLAS threads (BlasThreadsPerWorker), unless the user's environment says: the
// cores this process may use, a container's CPU limit included (a quota's fraction of a core
// rounds down, to at least one).
SpawnOptions SpawnOptionsOf(const std::string& dir, const std::string& name,
                            const std::vector<std::string>& argv, int workers) {
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.log_path = absl::StrCat(dir, "/", name, ".log");
  spawn.term_grace = absl::Seconds(5);
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    spawn.extra_env.push_back(
        absl::StrCat("OPENBLAS_NUM_THREADS=",
                     BlasThreadsPerWorker(std::max(1, static_cast<int>(UsableCores())), workers)));
  }
  return spawn;
}

// The controller's --checkpoint_dir, created when missing (nothing to do when empty).
absl::Status MakeCheckpointDirectory(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the checkpoint directory ", dir, ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ProcessEnd::Summary() const { return absl::StrCat(name, " (pid ", pid, ") ", how); }

std::string ProcessEnd::Tail() const {
  if (last_lines.empty()) return absl::StrCat("  its log (", log, ") is empty or unreadable");
  std::string tail = absl::StrCat("  last lines of its log (", log, "):");
  for (const std::string& line : last_lines) absl::StrAppend(&tail, "\n    ", line);
  return tail;
}

std::string ProcessEnd::Describe() const { return absl::StrCat(Summary(), "\n", Tail()); }

ClusterProcess::ClusterProcess(std::string name, Subprocess process,
                               std::vector<std::string> command, std::string ready_file)
    : name(std::move(name)),
      process(std::move(process)),
      command(std::move(command)),
      ready_file(std::move(ready_file)) {}

bool ClusterProcess::is_worker() const { return name.rfind("worker-", 0) == 0; }

std::string ClusterProcess::metrics_url() const {
  return absl::StrCat("http://", host, ":", metrics_port, "/metrics");
}

std::string HostNameOf(const std::string& name, bool colocate_shards) {
  if (!colocate_shards || name.rfind("ps-", 0) != 0) return name;
  return "worker-" + name.substr(3);
}

ProcessHost LocalCluster::HostOfProcess(const std::string& name) const {
  if (!options_.host_of) return {};
  return options_.host_of(HostNameOf(name, options_.colocate_shards)).value_or(ProcessHost{});
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(options));
  RETURN_IF_ERROR(cluster->SetUpSecurity());
  RETURN_IF_ERROR(cluster->WriteTokens());
  RETURN_IF_ERROR(MakeCheckpointDirectory(options.checkpoint_dir));
  // The listen and metrics ports of the controller and of every shard, distinct, fixed in their
  // command lines: a restarted server must come back where the others (and Prometheus) look.
  ASSIGN_OR_RETURN(const std::vector<int> ports, PickFreePorts(2 * (1 + options.ps_shards)));
  RETURN_IF_ERROR(cluster->StartController(ports[0], ports[1]));
  std::vector<ClusterProcess*> shards;
  for (int s = 0; s < options.ps_shards; ++s) {
    ASSIGN_OR_RETURN(ClusterProcess * shard,
                     cluster->SpawnShard(s, ports[2 * (1 + s)], ports[2 * (1 + s) + 1]));
    shards.push_back(shard);
  }
  // Workers register (and wait) while the shards come up.
  for (int w = 0; w < options.workers; ++w) RETURN_IF_ERROR(cluster->AddWorker().status());
  for (ClusterProcess* shard : shards) RETURN_IF_ERROR(cluster->AwaitReady(*shard));
  return cluster;
}

absl::Status LocalCluster::WriteTokens() {
  token_file_ = options_.dir + "/join-token";
  RETURN_IF_ERROR(WriteFileAtomically(token_file_, RandomToken() + "\n", 0600));
  operator_token_file_ = options_.dir + "/operator-token";
  return WriteFileAtomically(operator_token_file_, RandomToken() + "\n", 0600);
}

ClusterShared LocalCluster::Shared() const {
  return {options_.bin_dir, token_file_, operator_token_file_, controller_address_};
}

absl::StatusOr<ProcessPlace> LocalCluster::PlaceOf(const std::string& name, int port,
                                                   int metrics_port) {
  ProcessPlace place;
  place.host = HostOfProcess(name).address;
  place.port = port;
  place.metrics_port = metrics_port;
  ASSIGN_OR_RETURN(place.security_flags, SecurityFlagsOf(name));
  return place;
}

absl::Status LocalCluster::StartController(int port, int metrics_port) {
  ASSIGN_OR_RETURN(const ProcessPlace place, PlaceOf("controller", port, metrics_port));
  ASSIGN_OR_RETURN(ClusterProcess * controller,
                   Spawn("controller", ControllerCommand(options_, Shared(), place),
                         ReadyFileOf(options_.dir, "controller")));
  RETURN_IF_ERROR(AwaitReady(*controller));
  controller_address_ = absl::StrCat(controller->host, ":", controller->port);
  return absl::OkStatus();
}

absl::StatusOr<ClusterProcess*> LocalCluster::SpawnShard(int index, int port, int metrics_port) {
  const std::string name = absl::StrCat("ps-", index);
  ASSIGN_OR_RETURN(const ProcessPlace place, PlaceOf(name, port, metrics_port));
  std::vector<std::string> argv = ShardCommand(options_, Shared(), name, place);
  if (auto it = options_.flags_of_shard.find(index); it != options_.flags_of_shard.end()) {
    argv.insert(argv.end(), it->second.begin(), it->second.end());
  }
  return Spawn(name, std::move(argv), ReadyFileOf(options_.dir, name));
}

LocalCluster::~LocalCluster() { Stop(); }

absl::Status LocalCluster::SetUpSecurity() {
  if (!options_.tls) {
    client_flags_ = {"--insecure"};
    return absl::OkStatus();
  }
  const std::string dir = options_.dir + "/tls";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  ASSIGN_OR_RETURN(authority_, CertificateAuthority::Create(dir));
  ASSIGN_OR_RETURN(const TlsFiles operator_files, authority_->Issue("operator"));
  ASSIGN_OR_RETURN(client_security_, TransportSecurity::LoadMutualTls(operator_files));
  client_flags_ = CertificateAuthority::Flags(operator_files);
  return absl::OkStatus();
}

std::vector<std::string> LocalCluster::CtlFlags() const {
  std::vector<std::string> flags = {"--operator_token_file=" + operator_token_file_};
  flags.insert(flags.end(), client_flags_.begin(), client_flags_.end());
  return flags;
}

std::vector<std::string> LocalCluster::CtlCommand(SyncMode mode) const {
  std::vector<std::string> argv = {options_.bin_dir + "/ringside", "ctl", "mode",
                                   std::string(SyncModeName(mode)),
                                   "--controller=" + controller_address_};
  const std::vector<std::string> flags = CtlFlags();
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

absl::StatusOr<std::vector<std::string>> LocalCluster::SecurityFlagsOf(const std::string& name) {
  if (!authority_.has_value()) return std::vector<std::string>{"--insecure"};
  const std::string address = HostOfProcess(name).address;
  std::vector<std::string> addresses;
  if (address != "127.0.0.1") addresses.push_back(address);  // loopback is always named
  ASSIGN_OR_RETURN(const TlsFiles files, authority_->Issue(name, {}, addresses));
  return CertificateAuthority::Flags(files);
}

absl::StatusOr<std::vector<std::string>> LocalCluster::WorkerCommand(const std::string& name) {
  ASSIGN_OR_RETURN(const ProcessPlace place, PlaceOf(name, 0, 0));  // workers bind any port
  return launch::WorkerCommand(options_, Shared(), name, place);
}

absl::StatusOr<ClusterProcess*> LocalCluster::AddWorker(
    const std::vector<std::string>& extra_flags) {
  const int index = next_worker_++;
  const std::string name = absl::StrCat("worker-", index);
  const WorkerFiles files(options_.dir, name);
  ASSIGN_OR_RETURN(std::vector<std::string> argv, WorkerCommand(name));
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  if (auto it = options_.flags_of_worker.find(index); it != options_.flags_of_worker.end()) {
    argv.insert(argv.end(), it->second.begin(), it->second.end());
  }
  ASSIGN_OR_RETURN(ClusterProcess * worker, Spawn(name, std::move(argv), files.ready));
  worker->result_file = files.result;
  worker->trace_file = files.trace;
  worker->eval_file = files.evaluations;
  worker->params_file = files.params;
  RETURN_IF_ERROR(AwaitReady(*worker));
  return worker;
}

absl::StatusOr<ClusterProcess*> LocalCluster::Spawn(std::string name, std::vector<std::string> argv,
                                                    std::string ready_file) {
  // A ready file left by an earlier process of that name would be taken for this one's.
  std::remove(ready_file.c_str());
  // The prefix is part of the command, so a restart comes back on the same host.
  ProcessHost host = HostOfProcess(name);
  host.exec_prefix.insert(host.exec_prefix.end(), argv.begin(), argv.end());
  argv = std::move(host.exec_prefix);
  ASSIGN_OR_RETURN(Subprocess process,
                   Subprocess::Spawn(SpawnOptionsOf(options_.dir, name, argv, options_.workers)));
  processes_.push_back(std::make_unique<ClusterProcess>(std::move(name), std::move(process),
                                                        std::move(argv), std::move(ready_file)));
  processes_.back()->host = host.address;
  return processes_.back().get();
}

absl::Status LocalCluster::AwaitReady(ClusterProcess& process) {
  ASSIGN_OR_RETURN(ReadyFile ready, AwaitReadyFile(process.process, process.ready_file,
                                                   process.name, options_.start_timeout));
  process.port = ready.port;
  process.metrics_port = ready.metrics_port;
  return absl::OkStatus();
}

std::vector<ClusterProcess*> LocalCluster::workers() {
  std::vector<ClusterProcess*> workers;
  for (auto& process : processes_) {
    if (process->is_worker()) workers.push_back(process.get());
  }
  return workers;
}

void LocalCluster::CollectLostWorkers() {
  for (ClusterProcess* worker : workers()) {
    if (worker->expected_to_end || !worker->process.Poll().has_value()) continue;
    worker->expected_to_end = true;
    unreported_losses_.push_back(EndOf(*worker));
  }
}

std::vector<ProcessEnd> LocalCluster::TakeLostWorkerReports() {
  CollectLostWorkers();
  std::vector<ProcessEnd> reports;
  reports.swap(unreported_losses_);
  return reports;
}

std::optional<ProcessEnd> LocalCluster::DeadChild() {
  for (auto& process : processes_) {
    if (process->expected_to_end || (options_.restart_servers && !process->is_worker())) continue;
    if (process->process.Poll().has_value()) return EndOf(*process);
  }
  return std::nullopt;
}

absl::Status LocalCluster::RestartDeadServers() {
  if (stopped_) return absl::OkStatus();
  if (!gave_up_.ok()) return gave_up_;  // sticky: the window passing does not undo a crash loop
  const absl::Time now = absl::Now();
  for (auto& process : processes_) {
    ClusterProcess& server = *process;
    if (server.is_worker() || server.expected_to_end) continue;
    if (server.process.running() && !server.process.Poll().has_value()) continue;
    if (absl::Status status = RestartIfDue(server, now); !status.ok()) {
      gave_up_ = status;
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status LocalCluster::RestartIfDue(ClusterProcess& server, absl::Time now) {
  const ExitStatus ended = *server.process.exit_status();
  const std::string address = absl::StrCat(server.host, ":", server.port);
  if (!server.restart_due.has_value()) {  // a death not seen before
    std::vector<absl::Time>& restarts = server.restarts;
    restarts.erase(std::remove_if(restarts.begin(), restarts.end(),
                                  [&](absl::Time t) { return t < now - options_.restart_window; }),
                   restarts.end());
    const int made = static_cast<int>(restarts.size());
    if (made >= options_.max_restarts) {
      return absl::AbortedError(absl::StrCat(
          "gave up restarting ", server.name, " at ", address, ": it ended again (pid ",
          server.process.pid(), ", ", ended.ToString(), ") after ", made, " restarts within ",
          absl::FormatDuration(options_.restart_window),
          " (a crash loop, or its port taken by another process)\n", EndOf(server).Tail()));
    }
    // The first restart at once; then doubling waits (capped), as an orchestrator backs off.
    const absl::Duration backoff =
        made == 0 ? absl::ZeroDuration() : options_.restart_backoff * (1 << std::min(made - 1, 4));
    server.restart_due = now + backoff;
  }
  if (now < *server.restart_due) return absl::OkStatus();

  // Keep the dead one's log for a post-mortem; the replacement starts a fresh one.
  const pid_t dead_pid = server.process.pid();
  const std::string kept_log = absl::StrCat(server.process.log_path(), ".", ++server.restarted);
  std::rename(server.process.log_path().c_str(), kept_log.c_str());
  const ProcessEnd dead = EndOf(server, kept_log);
  std::remove(server.ready_file.c_str());
  ASSIGN_OR_RETURN(Subprocess replacement,
                   Subprocess::Spawn(SpawnOptionsOf(options_.dir, server.name, server.command,
                                                    options_.workers)));
  server.process = std::move(replacement);
  server.restarts.push_back(now);
  server.restart_due.reset();
  unreported_restarts_.push_back(absl::StrCat(
      server.name, " (pid ", dead_pid, ") ", ended.ToString(), "; restarted it as pid ",
      server.process.pid(), " at ", address, " with the same command line (restart ",
      server.restarts.size(), " of at most ", options_.max_restarts, " within ",
      absl::FormatDuration(options_.restart_window), ")\n", dead.Tail()));
  return absl::OkStatus();
}

std::vector<std::string> LocalCluster::TakeRestartReports() {
  std::vector<std::string> reports;
  reports.swap(unreported_restarts_);
  return reports;
}

absl::StatusOr<std::vector<TrainResultFile>> LocalCluster::WaitForResults(
    absl::Duration timeout, const std::function<bool()>& stop) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    CollectLostWorkers();
    if (options_.restart_servers) RETURN_IF_ERROR(RestartDeadServers());
    if (std::optional<ProcessEnd> dead = DeadChild()) return absl::InternalError(dead->Describe());
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
  stopped_ = true;  // nothing is restarted from now on
  // Workers first, so none sees its controller or shards vanish mid-step; in parallel.
  for (const bool workers_pass : {true, false}) {
    for (auto& process : processes_) {
      if (process->is_worker() == workers_pass && process->process.running()) {
        process->expected_to_end = true;
        kill(process->process.pid(), SIGTERM);
      }
    }
    for (auto& process : processes_) {
      if (process->is_worker() == workers_pass) process->process.Kill();
    }
  }
}

}  // namespace ringside::launch
