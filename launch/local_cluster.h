// A Ringside cluster as local processes on loopback: one ringside-controller, S ringside-ps
// shards and N ringside-worker daemons following it, with free ports picked at run time, a
// fresh join token, and every log, ready, result, trace, evaluations and parameter file in one
// directory.
// What `ringside compare` and `ringside up` run, and what the elastic tests drive.
//
// The controller and the shards are given their ports explicitly (picked once, at Start), so
// that one which dies can be restarted with the very same command line at the very same
// address, as an orchestrator restarts a pod (RestartDeadServers). Workers bind port 0: a lost
// worker is not restarted, the elastic job regroups without it.
//
// Every link is mutual TLS unless `tls` is off: Start makes a throw-away CA in <dir>/tls and a
// certificate per process (<name>.pem, <name>.key), plus one for an operator's `ringside ctl`
// (operator.pem); the processes get --tls_ca/--tls_cert/--tls_key, or --insecure.
//
// Every child is stopped by PID when the cluster is stopped or destroyed (SIGTERM, SIGKILL after
// a grace), and gets SIGKILL if the thread that started it dies: start it (and call
// RestartDeadServers and WaitForResults, which may start replacements) from a thread that lives
// as long as the cluster.
// Every process that ends without being asked to is reported with the last lines of its log
// (ProcessEnd), so that a failure explains itself; the logs stay in `dir`.
// Thread-compatible. Errors: spawn failures, DEADLINE_EXCEEDED or INTERNAL naming the process
// (with its last log lines) when one does not come up or dies, and ABORTED for a crash loop.
#ifndef RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_
#define RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cluster_files.h"
#include "common/metrics.h"
#include "common/training_options.h"
#include "common/transport_security.h"
#include "launch/certificates.h"
#include "launch/local_cluster_options.h"
#include "launch/subprocess.h"

namespace ringside::launch {

struct ClusterShared;  // launch/cluster_commands.h
struct ProcessPlace;

// The host process `name` runs on: its own name, but for "ps-<i>" with colocated shards,
// "worker-<i>" (the shard listens on that host's address at a port of its own).
std::string HostNameOf(const std::string& name, bool colocate_shards);

struct ClusterProcess {
  ClusterProcess(std::string name, Subprocess process, std::vector<std::string> command,
                 std::string ready_file);

  std::string name;    // "controller", "ps-<i>", "worker-<i>" (i: start order; ranks may differ)
  Subprocess process;  // the current one: a restart replaces it
  std::vector<std::string> command;  // its argv; a restart runs it again
  std::string ready_file;            // where it writes {port, metrics_port} once serving
  std::string host = "127.0.0.1";    // the address it listens on (ProcessHost::address)
  int port = 0;
  int metrics_port = 0;
  std::string result_file;       // workers
  std::string trace_file;        // workers
  std::string eval_file;         // workers: test evaluations while rank 0
  std::string params_file;       // workers
  bool expected_to_end = false;  // killed on purpose: not a failure
  bool is_worker() const;
  std::string metrics_url() const;

  // Servers under restart_servers: the restarts made within the window, and when the next one
  // is due once a death has been seen (after its back-off).
  std::vector<absl::Time> restarts;
  std::optional<absl::Time> restart_due;
  int restarted = 0;  // restarts ever made: names the kept logs <name>.log.<n>
};

// A process of the cluster that ended without being asked to, and what it said last: what
// `ringside compare`, `lab` and `up` print and report.
struct ProcessEnd {
  std::string name;  // "worker-0"
  pid_t pid = 0;
  std::string how;  // ExitStatus::ToString(): "exit code 1", "killed by signal 9 (SIGKILL)"
  std::string log;  // its whole log
  std::vector<std::string> last_lines;  // of its log, each quoted and cut (QuotedTailOfFile)

  // "worker-0 (pid 123) exit code 1".
  std::string Summary() const;
  // "  last lines of its log (PATH):" and below it the last lines, one per line, indented.
  std::string Tail() const;
  // Summary(), then Tail() on the lines below.
  std::string Describe() const;
};

class LocalCluster {
 public:
  // Starts the controller, then the shards and workers, and waits until each is serving.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();

  const std::string& controller_address() const { return controller_address_; }
  // The controller's --operator_token_file: what `ringside ctl mode` needs to switch modes.
  const std::string& operator_token_file() const { return operator_token_file_; }
  // What a client outside the cluster (`ringside ctl`, `ringside health`, a test) needs to reach
  // it: the operator's certificate under TLS, plaintext otherwise; as a value and as flags.
  const TransportSecurity& client_security() const { return client_security_; }
  const std::vector<std::string>& client_flags() const { return client_flags_; }
  // Every flag `ringside ctl` needs besides --controller: the operator token and
  // client_flags() (what `ringside up --ready_file` lists as client_flags).
  std::vector<std::string> CtlFlags() const;
  // `ringside ctl mode <mode>` against this cluster's controller, with CtlFlags().
  std::vector<std::string> CtlCommand(SyncMode mode) const;
  std::vector<std::unique_ptr<ClusterProcess>>& processes() { return processes_; }
  ClusterProcess& controller() { return *processes_[0]; }
  std::vector<ClusterProcess*> workers();

  // Starts one more worker (it joins at the controller's next generation).
  absl::StatusOr<ClusterProcess*> AddWorker(const std::vector<std::string>& extra_flags = {});
  // The command line AddWorker() runs, for a person adding a worker by hand (under TLS this
  // issues `name` its certificate).
  absl::StatusOr<std::vector<std::string>> WorkerCommand(const std::string& name);

  // A child that ended without being asked to (the first found), with its log's last lines.
  // Under restart_servers only workers count: a dead server is RestartDeadServers' business.
  std::optional<ProcessEnd> DeadChild();

  // Restarts every controller or shard that ended without being asked to, with its own
  // command line (so at its own address), once its back-off is over; the previous log is kept
  // as <name>.log.<n> and the stale ready file removed, so the replacement writes it afresh.
  // Non-blocking: call it in a loop. ABORTED naming the process and quoting its log when it is
  // a crash loop (see LocalClusterOptions::max_restarts), and from then on: a replacement that
  // cannot bind its port (taken meanwhile) ends at once and is retried like any crash, so a
  // port taken for good ends here too. Each restart is reported once by TakeRestartReports().
  // A no-op after Stop().
  absl::Status RestartDeadServers();
  // "<name> (pid P) <how it ended>; restarted as pid Q at ADDRESS ..." for every restart since
  // the last call, followed by the dead one's ProcessEnd::Tail() on the lines below.
  std::vector<std::string> TakeRestartReports();

  // Marks every worker that ended without being asked to as lost (expected_to_end); the elastic
  // job goes on without them. Each loss is reported once by TakeLostWorkerReports().
  void CollectLostWorkers();
  // Every worker lost since the last call.
  std::vector<ProcessEnd> TakeLostWorkerReports();

  // Waits until every worker still running has written its result file; a worker that dies
  // meanwhile is lost (CollectLostWorkers), not a failure. Fails at once, naming the process,
  // when the controller or a shard dies (under restart_servers: when RestartDeadServers gives
  // up), or when no worker is left; `stop` (polled) cancels the wait (CANCELLED).
  absl::StatusOr<std::vector<TrainResultFile>> WaitForResults(
      absl::Duration timeout, const std::function<bool()>& stop = nullptr);

  // Stops every child by PID, workers first; idempotent.
  void Stop();

 private:
  explicit LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}
  absl::StatusOr<ClusterProcess*> Spawn(std::string name, std::vector<std::string> argv,
                                        std::string ready_file);
  absl::Status AwaitReady(ClusterProcess& process);
  // The security flags of the process `name`: its own certificate's, or --insecure.
  absl::StatusOr<std::vector<std::string>> SecurityFlagsOf(const std::string& name);
  ProcessHost HostOfProcess(const std::string& name) const;  // options_.host_of's, or loopback
  // Writes the join and operator tokens into the cluster's directory.
  absl::Status WriteTokens();
  // What every process's command line shares (launch/cluster_commands.h).
  ClusterShared Shared() const;
  // Where the process `name` listens (its host, these ports) and its security flags.
  absl::StatusOr<ProcessPlace> PlaceOf(const std::string& name, int port, int metrics_port);
  // Starts the controller at these ports and waits until it serves.
  absl::Status StartController(int port, int metrics_port);
  // Starts shard `index` at these ports (not waiting for it).
  absl::StatusOr<ClusterProcess*> SpawnShard(int index, int port, int metrics_port);
  // Makes the CA and the operator's certificate (TLS), or notes plaintext.
  absl::Status SetUpSecurity();
  // One dead server: gives up (crash loop), schedules its restart or, when due, restarts it.
  absl::Status RestartIfDue(ClusterProcess& server, absl::Time now);

  LocalClusterOptions options_;
  std::string token_file_;
  std::string operator_token_file_;
  std::string controller_address_;
  std::optional<CertificateAuthority> authority_;  // under TLS
  TransportSecurity client_security_;
  std::vector<std::string> client_flags_;
  int next_worker_ = 0;
  bool stopped_ = false;
  absl::Status gave_up_;  // RestartDeadServers' crash-loop error, once there is one
  std::vector<ProcessEnd> unreported_losses_;
  std::vector<std::string> unreported_restarts_;
  std::vector<std::unique_ptr<ClusterProcess>> processes_;
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_
