// The command lines of a local cluster's processes (ringside-controller, ringside-ps,
// ringside-worker), as LocalCluster (launch/local_cluster.h) runs them. Pure functions of the
// cluster's options and of what LocalCluster settles at start (ports, token files, certificates),
// so that a test can hold every flag they pass against the binary's own list
// (tests/launch/cluster_commands_test.cc runs each binary's --helpfull): a flag renamed in a
// binary fails there, not in a cluster that never comes up. The job's settings are written by
// TrainingOptionsArgv (common/training_options.h). Thread-safe (no state).
#ifndef RINGSIDE_LAUNCH_CLUSTER_COMMANDS_H_
#define RINGSIDE_LAUNCH_CLUSTER_COMMANDS_H_

#include <string>
#include <vector>

#include "launch/local_cluster_options.h"

namespace ringside::launch {

inline constexpr char kControllerBinary[] = "ringside-controller";
inline constexpr char kShardBinary[] = "ringside-ps";
inline constexpr char kWorkerBinary[] = "ringside-worker";

// What every process of one cluster shares.
struct ClusterShared {
  std::string bin_dir;              // where the binaries are
  std::string token_file;           // --join_token_file
  std::string operator_token_file;  // the controller's --operator_token_file
  std::string controller;           // HOST:PORT, once the controller serves (shards, workers)
};

// Where one process listens, and how it proves who it is.
struct ProcessPlace {
  std::string host = "127.0.0.1";  // the address it listens on (ProcessHost::address)
  // --listen and --metrics_listen ports: fixed for the servers (a restart comes back at the
  // same address); 0 for workers (any free port, reported in the ready file).
  int port = 0;
  int metrics_port = 0;
  std::vector<std::string> security_flags;  // its certificate's (--tls_*), or --insecure
};

// Where the process `name` writes {port, metrics_port, ...} once serving: <dir>/<name>.ready.
std::string ReadyFileOf(const std::string& dir, const std::string& name);

// The files a worker named `name` writes into the cluster's directory `dir`.
struct WorkerFiles {
  WorkerFiles(const std::string& dir, const std::string& name);
  std::string ready, result, trace, evaluations, params;
};

// ringside-controller ("controller"): the cluster's size and mode, its tokens, its checkpoints
// and the job's settings (the controller hands them to every member).
std::vector<std::string> ControllerCommand(const LocalClusterOptions& options,
                                           const ClusterShared& shared, const ProcessPlace& at);

// ringside-ps named `name` ("ps-<i>"), elastic: it takes its index and the job from the
// controller.
std::vector<std::string> ShardCommand(const LocalClusterOptions& options,
                                      const ClusterShared& shared, const std::string& name,
                                      const ProcessPlace& at);

// ringside-worker named `name` ("worker-<i>"), elastic: the job from the controller, its own
// settings (--device) and options.worker_flags from here, its files WorkerFiles(options.dir,
// name).
std::vector<std::string> WorkerCommand(const LocalClusterOptions& options,
                                       const ClusterShared& shared, const std::string& name,
                                       const ProcessPlace& at);

// The OpenBLAS threads each of `workers` workers on one machine gets: its `cores` shared out, at
// least one. OpenBLAS otherwise starts a thread per core in every worker, and with more threads
// than cores they spin in sched_yield waiting for each other (in a 4-worker `ringside compare`
// on 2 cores, about a tenth of the machine's CPU went there).
int BlasThreadsPerWorker(int cores, int workers);

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_CLUSTER_COMMANDS_H_
