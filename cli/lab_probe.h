// `ringside lab --probe_out=FILE`: the probe (cli/cluster_probe_run.h) of the lab's own links. A
// probe member (`ringside-worker --probe_token_file`, serving only the link probe) starts in each
// worker host's namespace; ringside probes each through the management link, so every echo
// crosses that host's shaped ingress and egress, both at its rate (launch/network_lab.h), as a
// message between two lab hosts crosses the sender's egress and the receiver's ingress. The
// members are stopped, by their own pids, before this returns, also on failure.
// Thread-compatible. Errors: the members' start (their log's last lines) and the probe's.
#ifndef RINGSIDE_CLI_LAB_PROBE_H_
#define RINGSIDE_CLI_LAB_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cluster_probe.h"
#include "launch/network_lab.h"

namespace ringside::cli {

struct LabProbeOptions {
  std::string bin_dir;             // where ringside-worker is
  std::vector<std::string> hosts;  // the lab hosts whose links are probed (worker-0, ...)
  bool tls = true;                 // mutual TLS with a throw-away CA; false: plaintext
  std::string model;
  std::string activation;
  std::string device = "cpu";
};

absl::StatusOr<ClusterProbe> ProbeLabLinks(const launch::NetworkLab& lab,
                                           const LabProbeOptions& options);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_LAB_PROBE_H_
