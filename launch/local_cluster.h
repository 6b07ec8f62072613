// A Ringside cluster as local processes on loopback: one ringside-controller, S ringside-ps
// shards and N ringside-worker daemons following it, with free ports picked at run time, a
// fresh join token, and every log, ready, result, trace and parameter file in one directory.
// What `ringside compare` and `ringside up` run, and what the elastic tests drive.
//
// Every child is stopped by PID when the cluster is stopped or destroyed (SIGTERM, SIGKILL after
// a grace), and gets SIGKILL if the thread that started it dies: start it from a thread that
// lives as long as the cluster.
// Thread-compatible. Errors: spawn failures, and DEADLINE_EXCEEDED or INTERNAL naming the
// process (with its last log lines) when one does not come up or dies.
#ifndef RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_
#define RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_

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
#include "launch/subprocess.h"
#include "model/training_options.h"

namespace ringside::launch {

struct LocalClusterOptions {
  std::string bin_dir;  // where ringside-controller, -ps and -worker are
  std::string dir;      // an existing directory for the cluster's files
  int workers = 4;
  int ps_shards = 2;
  SyncMode mode = SyncMode::kRing;
  worker::TrainingOptions training;
  absl::Duration heartbeat_timeout = absl::Seconds(2);
  absl::Duration collective_timeout = absl::Seconds(30);  // workers' --timeout
  absl::Duration start_timeout = absl::Seconds(60);
  std::vector<std::string> worker_flags;  // extra flags for every worker
  // Extra flags for the worker started i-th (tests: `--fault_at=...` for one of them).
  std::map<int, std::vector<std::string>> flags_of_worker;
};

struct ClusterProcess {
  std::string name;  // "controller", "ps-<i>", "worker-<i>" (i: start order; ranks may differ)
  Subprocess process;
  int port = 0;
  int metrics_port = 0;
  std::string result_file;       // workers
  std::string trace_file;        // workers
  std::string params_file;       // workers
  bool expected_to_end = false;  // killed on purpose: not a failure
  std::string metrics_url() const;
};

class LocalCluster {
 public:
  // Starts the controller, then the shards and workers, and waits until each is serving.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();

  const std::string& controller_address() const { return controller_address_; }
  std::vector<std::unique_ptr<ClusterProcess>>& processes() { return processes_; }
  ClusterProcess& controller() { return *processes_[0]; }
  std::vector<ClusterProcess*> workers();

  // Starts one more worker (it joins at the controller's next generation).
  absl::StatusOr<ClusterProcess*> AddWorker(const std::vector<std::string>& extra_flags = {});
  // The command line AddWorker() runs, for a person adding a worker by hand.
  std::vector<std::string> WorkerCommand(const std::string& name) const;

  // A child that ended without being asked to: "<name> (pid P) <how it ended>; last lines: ...".
  std::optional<std::string> DeadChild();

  // Marks every worker that ended without being asked to as lost (expected_to_end); the elastic
  // job goes on without them. Each loss is reported once by TakeLostWorkerReports().
  void CollectLostWorkers();
  // "<name> (pid P) <how it ended>" for every worker lost since the last call.
  std::vector<std::string> TakeLostWorkerReports();

  // Waits until every worker still running has written its result file; a worker that dies
  // meanwhile is lost (CollectLostWorkers), not a failure. Fails at once, naming the process,
  // when the controller or a shard dies, or when no worker is left; `stop` (polled) cancels the
  // wait (CANCELLED).
  absl::StatusOr<std::vector<TrainResultFile>> WaitForResults(
      absl::Duration timeout, const std::function<bool()>& stop = nullptr);

  // Stops every child by PID, workers first; idempotent.
  void Stop();

 private:
  explicit LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}
  absl::StatusOr<ClusterProcess*> Spawn(std::string name, std::vector<std::string> argv);
  absl::Status AwaitReady(ClusterProcess& process, const std::string& ready_file);

  LocalClusterOptions options_;
  std::string token_file_;
  std::string controller_address_;
  int next_worker_ = 0;
  std::vector<std::string> unreported_losses_;
  std::vector<std::unique_ptr<ClusterProcess>> processes_;
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_LOCAL_CLUSTER_H_
