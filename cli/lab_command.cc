// `ringside lab`: `ringside compare` with every process of each cluster in its own network
// namespace, on links shaped to --link_rate in both directions (--slow_link: a host's own rate;
// launch/network_lab.h), and the cost model's bandwidth bound beside the measured sync time.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/lab_bound.h"
#include "cli/lab_probe.h"
#include "common/status_macros.h"
#include "launch/network_lab.h"
#include "server/ps/ps_client.h"

namespace ringside::cli {
namespace {

using launch::LabHost;
using launch::NetworkLab;

// Stale labs first: a run killed with SIGKILL could not remove its own.
absl::Status RemoveStale(std::ostream& out) {
  ASSIGN_OR_RETURN(const std::vector<std::string> removed, NetworkLab::RemoveStaleLabs());
  if (!removed.empty()) {
    out << "lab: removed " << removed.size()
        << " namespaces and directories left by runs that are gone: "
        << absl::StrJoin(removed, ", ") << "\n";
  }
  return absl::OkStatus();
}

// One host per process the clusters start: the controller, every shard and every worker.
// One host per process of the largest cluster the run starts (a sweep's clusters reuse them).
std::vector<std::string> HostNames(const CompareOptions& options) {
  int workers = options.cluster.workers, shards = options.cluster.ps_shards;
  for (int n : options.worker_counts) workers = std::max(workers, n);
  for (int s : options.shard_counts) shards = std::max(shards, s);
  std::vector<std::string> names = {"controller"};
  for (int s = 0; s < shards; ++s) names.push_back(absl::StrCat("ps-", s));
  for (int w = 0; w < workers; ++w) names.push_back(absl::StrCat("worker-", w));
  return names;
}

// --probe_out: the lab's worker links probed (cli/lab_probe.h), the file written, and every run
// predicted from it.
absl::Status ProbeTheLab(const NetworkLab& lab, CompareOptions& options, std::ostream& out) {
  LabProbeOptions probe;
  probe.bin_dir = options.cluster.bin_dir;
  probe.tls = options.cluster.tls;
  for (const LabHost& host : lab.hosts()) {
    if (absl::StartsWith(host.name, "worker-")) probe.hosts.push_back(host.name);
  }
  const TrainingOptions& job = options.jobs.front();
  probe.model = job.model;
  probe.activation = job.activation;
  probe.device = job.device == "auto" ? "cpu" : job.device;
  out << "lab: probing the links of " << probe.hosts.size()
      << " worker hosts through their shapers, and the job's model on this host...\n";
  out.flush();
  ASSIGN_OR_RETURN(const ClusterProbe probed, ProbeLabLinks(lab, probe));
  RETURN_IF_ERROR(WriteClusterProbe(options.lab_probe_out, probed));
  out << "lab: probe written to " << options.lab_probe_out << " (slowest link "
      << probed.costs.link_bytes_per_second * 8 / 1e6 << " Mbit/s, latency "
      << probed.costs.link_latency_seconds * 1e6 << " us)\n";
  options.predicted_costs = probed.costs;
  return absl::OkStatus();
}

}  // namespace

absl::Status RunLab(CompareOptions options, const TerminationSignals& signals, std::ostream& out) {
  if (!options.link_rate.has_value()) {
    return absl::InvalidArgumentError("ringside lab needs --link_rate=RATE (e.g. 100mbit)");
  }
  launch::NetworkLabOptions lab_options;
  lab_options.hosts = HostNames(options);
  lab_options.rate = *options.link_rate;
  lab_options.host_rates = options.slow_links;
  // Before anything is built: a typo in a host name must not cost a lab's set-up.
  RETURN_IF_ERROR(CheckSlowLinkHosts(options.slow_links, lab_options.hosts));
  RETURN_IF_ERROR(NetworkLab::CheckPrerequisites());
  RETURN_IF_ERROR(RemoveStale(out));
  ASSIGN_OR_RETURN(std::unique_ptr<NetworkLab> lab, NetworkLab::Create(lab_options));
  out << "lab " << lab->tag() << ": " << lab->hosts().size()
      << " hosts, each in its own network namespace on a bridge, every link shaped to "
      << options.link_rate->text << " each way (tbf, burst " << lab->burst_bytes()
      << " B; TCP acknowledgements ahead of queued data)";
  for (const auto& [host, rate] : options.slow_links) out << ", " << host << "'s to " << rate.text;
  out << "; ringside reaches them through " << lab->management_device() << ":";
  for (const LabHost& host : lab->hosts()) out << " " << host.name << "=" << host.address;
  out << "\n";
  out.flush();
  if (signals.received()) return absl::CancelledError("stopped by a signal; the lab is removed");
  options.link_burst_bytes = lab->burst_bytes();
  if (options.ps_window_bytes == 0) options.ps_window_bytes = server::kLabPsWindowBytes;
  if (!options.lab_probe_out.empty()) RETURN_IF_ERROR(ProbeTheLab(*lab, options, out));
  const NetworkLab* hosts = lab.get();
  options.host_of = [hosts](const std::string& name) -> std::optional<launch::ProcessHost> {
    const LabHost* host = hosts->host(name);
    if (host == nullptr) return std::nullopt;  // not a lab process: stays here on loopback
    return launch::ProcessHost{host->address, hosts->ExecPrefix(*host)};
  };
  const absl::Status compared = RunCompare(options, signals, out);
  // Removed here to report a failure; the destructor would remove it as silently.
  const absl::Status removed = lab->Destroy();
  if (!removed.ok()) {
    out << "lab: could not remove everything: " << removed.message()
        << "; `ringside lab --cleanup` retries once this process is gone\n";
  }
  RETURN_IF_ERROR(compared);
  return removed;
}

absl::Status RunLabCleanup(std::ostream& out) {
  RETURN_IF_ERROR(NetworkLab::CheckPrerequisites());
  ASSIGN_OR_RETURN(const std::vector<std::string> removed, NetworkLab::RemoveStaleLabs());
  out << "lab: removed " << removed.size() << " stale namespaces and directories"
      << (removed.empty() ? "" : ": " + absl::StrJoin(removed, ", ")) << "\n";
  return absl::OkStatus();
}

}  // namespace ringside::cli
