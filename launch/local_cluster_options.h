// What a local cluster (launch/local_cluster.h) is started with: its size, mode and job, its
// processes' places and flags, and its restart policy. Apart from the cluster, so that the
// processes' command lines (launch/cluster_commands.h) are made from the options alone.
// Plain values; thread-compatible.
#ifndef RINGSIDE_LAUNCH_LOCAL_CLUSTER_OPTIONS_H_
#define RINGSIDE_LAUNCH_LOCAL_CLUSTER_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/training_options.h"

namespace ringside::launch {

// Where one process of the cluster runs: the address it listens on and is dialled at, and the
// argv prefix that puts it there (e.g. `ip netns exec NS` for a lab host, launch/network_lab.h).
struct ProcessHost {
  std::string address = "127.0.0.1";  // an IPv4 address; also in its certificate
  std::vector<std::string> exec_prefix;
};
// By process name ("controller", "ps-<i>", "worker-<i>"); nullopt: loopback, here.
using HostOf = std::function<std::optional<ProcessHost>(const std::string& name)>;

struct LocalClusterOptions {
  std::string bin_dir;  // where ringside-controller, -ps and -worker are
  std::string dir;      // an existing directory for the cluster's files
  int workers = 4;
  int ps_shards = 2;
  SyncMode mode = SyncMode::kRing;
  TrainingOptions training;
  absl::Duration heartbeat_timeout = absl::Seconds(2);
  absl::Duration collective_timeout = absl::Seconds(30);  // workers' --timeout
  absl::Duration start_timeout = absl::Seconds(60);
  std::vector<std::string> worker_flags;  // extra flags for every worker
  // Extra flags for the worker started i-th (tests: `--fault_at=...` for one of them).
  std::map<int, std::vector<std::string>> flags_of_worker;
  // Extra flags for shard i (ps-i), a restart's included.
  std::map<int, std::vector<std::string>> flags_of_shard;
  // The controller's --checkpoint_dir (created when missing; empty: none) and
  // --checkpoint_every (0: none).
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  // Whether a controller or shard that ends without being asked to is restarted
  // (RestartDeadServers, which WaitForResults then calls) instead of failing the cluster.
  bool restart_servers = false;
  // The crash-loop guard of those restarts: a server restarted `max_restarts` times within
  // `restart_window` that dies again is given up on. A restart waits `restart_backoff` times
  // 2^(k-1) (at most 16 times) after the death, k being the restarts already made within the
  // window (the first is at once): a process that dies on start is not respawned in a tight
  // loop, and a cause that clears by itself (a replacement shard refused while the controller
  // still holds its predecessor's registration, up to a heartbeat timeout) gets time to clear.
  int max_restarts = 5;
  absl::Duration restart_window = absl::Minutes(1);
  absl::Duration restart_backoff = absl::Seconds(1);
  // Mutual TLS on every link (certificates made in <dir>/tls); false: plaintext (--insecure).
  bool tls = true;
  // Where each process runs (`ringside lab`: each in its own network namespace); null: every
  // one on 127.0.0.1 here. The caller's own process must be able to reach every address.
  HostOf host_of;
  // Shard i runs on worker i's host (`--colocate`, with ps_shards == workers): host_of is asked
  // for "worker-i" where it would be for "ps-i" (HostNameOf).
  bool colocate_shards = false;
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_LOCAL_CLUSTER_OPTIONS_H_
