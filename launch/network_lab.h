// The lab's network: one Linux network namespace per host, joined by a bridge, every host's
// link shaped to one rate in both directions, so that a local cluster's traffic meets the limit
// a real network would put on it (`ringside lab --link_rate=RATE`); a host may get a rate of its
// own (`--slow_link=HOST:RATE`).
//
// Topology (all names carry the lab's tag, rslab-<pid>-<hex>, unique per run):
//
//   root namespace (ringside)                 rslab-<tag>-sw                 rslab-<tag>-<host>
//   rsl<hex> 198.18.X.1/24  ==unshaped veth==  mgmt ┐
//                                                    br0 ─ h<j> ==veth==  eth0 198.18.X.(10+j)/24
//                                                         (tbf: host ingress) (tbf: host egress)
//
// Each host's veth carries a tbf qdisc at the rate (its own, where it has one) on both ends: on
// eth0 (what the host sends) and on the switch's port h<j> (what it receives). Under each tbf a
// pfifo_fast sends TCP acknowledgements, marked by an iptables rule in each host's namespace, ahead
// of queued data, as a real host's fq or fq_codel keeps a flow's acknowledgements out of another
// flow's queue. The management veth is not shaped: ringside reaches every host's gRPC and /metrics
// through it without holding up the hosts' links other than in their own (shaped) ingress. The /24
// is picked from 198.18.0.0/15 (RFC 2544's benchmarking range), avoiding any the root namespace
// already has.
//
// Ownership: a NetworkLab owns its namespaces (and, through them, every device and qdisc); its
// destructor removes them, also after a partial Create. A run killed with SIGKILL leaves them,
// and its directory of command logs (<tmp>/ringside-lab-<pid>-XXXXXX): RemoveStaleLabs() deletes
// every rslab-<pid>-* namespace and every such directory whose pid is no longer alive (each
// `ringside lab` calls it first; `ringside lab --cleanup` only that).
// Thread-compatible. Errors: FAILED_PRECONDITION naming what is missing (root, iproute2's ip or
// tc, iptables, network namespaces, bridges, veth, the tbf qdisc, iptables' CLASSIFY target),
// INTERNAL with the failing command and its output otherwise.
#ifndef RINGSIDE_LAUNCH_NETWORK_LAB_H_
#define RINGSIDE_LAUNCH_NETWORK_LAB_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/link_rate.h"
#include "launch/temp_dir.h"

namespace ringside::launch {

struct LabHost {
  std::string name;     // as given ("controller", "ps-0", "worker-3")
  std::string netns;    // rslab-<tag>-<name>
  std::string address;  // its IPv4 address on the lab's /24
};

struct NetworkLabOptions {
  std::vector<std::string> hosts;  // distinct names of [a-z0-9-], at most 200 of them
  LinkRate rate;                   // both directions of every host's link
  // Hosts whose link (both directions) has a rate of its own; each must be one of `hosts`.
  std::map<std::string, LinkRate> host_rates;
};

class NetworkLab {
 public:
  // Fails at once, naming what is missing, when the lab cannot be built here: not root, no
  // `ip` or `tc` (iproute2), no `iptables`. The kernel features are probed by Create's first
  // commands.
  static absl::Status CheckPrerequisites();

  // Creates the namespaces, the bridge, the links and their qdiscs.
  static absl::StatusOr<std::unique_ptr<NetworkLab>> Create(const NetworkLabOptions& options);
  ~NetworkLab();
  NetworkLab(const NetworkLab&) = delete;
  NetworkLab& operator=(const NetworkLab&) = delete;

  // Removes every namespace and directory of labs whose owning process is gone; returns their
  // names (the directories' paths).
  static absl::StatusOr<std::vector<std::string>> RemoveStaleLabs();
  // The directories of labs in `base` (ringside-lab-<pid>-*) whose pid is no longer alive,
  // removed; returns their paths. Entries that are not a lab's, or whose owner lives, are left.
  static std::vector<std::string> RemoveStaleDirectories(const std::string& base);
  // The namespaces of the lab(s) owned by `pid` (rslab-<pid>-*): what tests look for.
  static std::vector<std::string> NamespacesOf(int pid);

  const std::string& tag() const { return tag_; }
  const std::string& management_device() const { return management_device_; }
  const std::vector<LabHost>& hosts() const { return hosts_; }
  const LabHost* host(const std::string& name) const;  // null when not a host of the lab
  // The argv prefix that runs a program in `host`'s namespace: `ip netns exec <netns>` (which
  // execs it, so the pid stays the program's).
  std::vector<std::string> ExecPrefix(const LabHost& host) const;
  // The tbf burst the shapers at rate() allow, in bytes: a step can move at most this much faster
  // than bytes ÷ rate (the two shapers of a path are in series, so their bursts do not add).
  int64_t burst_bytes() const { return burst_bytes_; }
  const LinkRate& rate() const { return rate_; }
  // The rate of `host`'s link: its own (NetworkLabOptions::host_rates) or rate().
  const LinkRate& rate_of(const std::string& host) const;

  // Removes every namespace of the lab (and with them its devices and qdiscs). Idempotent; the
  // first failure is returned, the other namespaces are still removed.
  absl::Status Destroy();

 private:
  NetworkLab() = default;
  absl::Status Build(const NetworkLabOptions& options);
  absl::Status AddHost(const LabHost& host, int index);
  absl::Status Shape(const LabHost& host, const std::string& netns, const std::string& device);
  absl::Status PickSubnet();
  // Runs `argv` (argv[0]: "ip", "tc" or "iptables", found in /usr/sbin or /sbin) to its end;
  // INTERNAL with the command and its output when it fails. `what` says what it was for, in the
  // error.
  absl::Status Run(const std::vector<std::string>& argv, const std::string& what);

  std::string tag_;
  std::optional<TempDir> dir_;  // the ip/tc commands' output, for error messages
  std::string management_device_;
  std::string subnet_;  // "198.18.X" (or 198.19.X)
  LinkRate rate_;
  std::map<std::string, LinkRate> host_rates_;
  int64_t burst_bytes_ = 0;
  std::vector<std::string> namespaces_;  // created so far: what Destroy removes
  std::vector<LabHost> hosts_;
  int commands_ = 0;  // numbers the commands' output files
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_NETWORK_LAB_H_
