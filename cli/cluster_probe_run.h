// `ringside plan --probe_out`'s probe: RunClusterProbe measures
//  - each member's link (server/probe/link_probe.h: echoes of 1 KiB to 4 MiB through the job's
//    transport security, fitted to α + β·m);
// and asks each member for its profile of itself (worker/member_profile.h), on its own device
// and cores:
//  - a sample's compute: forward and backward passes of the job's model;
//  - the sync's CPU seconds per byte: decoding, summing and encoding a float32 buffer (the
//    ring's per-hop work), plus what a link's fit charges per byte beyond the wire;
//  - the cores a process gets: the member's usable cores (its affinity, capped by its cgroup's
//    CPU quota) ÷ the processes the cluster puts on its host;
//  - a shard's service rate: float32 bytes summed per second into a running sum.
// Into a ClusterProbe (common/cluster_probe.h) whose figures are the slowest member's.
// Thread-compatible. Errors: UNAVAILABLE / DEADLINE_EXCEEDED naming the member that could not be
// reached and gRPC's reason; INVALID_ARGUMENT for bad options or a fit that fails.
#ifndef RINGSIDE_CLI_CLUSTER_PROBE_RUN_H_
#define RINGSIDE_CLI_CLUSTER_PROBE_RUN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cluster_probe.h"
#include "server/probe/link_probe.h"

namespace ringside::cli {

struct ProbeOptions {
  std::vector<std::string> members;  // HOST:PORT of each member's LinkProbeService
  // Each link's echoes: the members' secret and security, the deadline, the repeats (also of
  // the compute, CPU and shard timings), the size budget and the fit.
  probe::LinkProbeOptions links;
  // Each member's link probed on a thread of its own, all at once: only where the links do not
  // share the prober's (the lab's members, behind their own shapers, reached unshaped).
  bool concurrent_links = false;
  // Every member profiles itself (the members' own hosts); false: the first only, where the
  // members share one host (the lab's namespaces).
  bool profile_each_member = true;
  absl::Duration profile_timeout = absl::Seconds(120);  // each member's profile
  std::string model = "4,16,3";
  std::string activation = "tanh";
  std::string device = "cpu";  // RunLoopbackProbe's; a remote member profiles on its own
  int64_t batch_rows = 64;     // rows per timed gradient computation
  int processes_per_host = 1;  // of the cluster on a member's host, for cores_per_process
};

absl::StatusOr<ClusterProbe> RunClusterProbe(const ProbeOptions& options);

// The probe of this host on loopback: `members` LinkProbeServices started in-process on
// 127.0.0.1 with `options.links.security`, profiling this process on `options.device`, then
// RunClusterProbe over them (one profile: they are all this process).
absl::StatusOr<ClusterProbe> RunLoopbackProbe(ProbeOptions options, int members);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_CLUSTER_PROBE_RUN_H_
