#include "cli/cluster_probe_run.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"
#include "server/probe/link_probe.h"
#include "worker/member_profile.h"

namespace ringside::cli {
namespace {

// Every member's link, in the members' order.
absl::StatusOr<std::vector<LinkProbe>> ProbeLinks(const ProbeOptions& options) {
  std::vector<absl::StatusOr<LinkProbe>> probed(options.members.size(),
                                                absl::UnknownError("not probed"));
  if (options.concurrent_links) {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < options.members.size(); ++i) {
      threads.emplace_back(
          [&, i] { probed[i] = probe::ProbeLink(options.members[i], options.links); });
    }
    for (std::thread& thread : threads) thread.join();
  } else {
    for (size_t i = 0; i < options.members.size(); ++i) {
      probed[i] = probe::ProbeLink(options.members[i], options.links);
    }
  }
  std::vector<LinkProbe> links;
  for (absl::StatusOr<LinkProbe>& link : probed) {
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  return links;
}

absl::Status CheckProbeOptions(const ProbeOptions& options) {
  if (options.members.empty()) return absl::InvalidArgumentError("the probe needs a member");
  if (options.links.repeats < 1) return absl::InvalidArgumentError("probe repeats must be >= 1");
  if (options.batch_rows < 1 || options.processes_per_host < 1) {
    return absl::InvalidArgumentError("probe batch rows and processes per host must be >= 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterProbe> RunClusterProbe(const ProbeOptions& options) {
  RETURN_IF_ERROR(CheckProbeOptions(options));
  ClusterProbe probe;
  probe.model = options.model;
  probe.activation = options.activation;
  probe.device = options.device;
  ASSIGN_OR_RETURN(probe.links, ProbeLinks(options));
  const auto slowest = std::min_element(probe.links.begin(), probe.links.end(),
                                        [](const LinkProbe& a, const LinkProbe& b) {
                                          return a.bytes_per_second < b.bytes_per_second;
                                        });
  ClusterCosts& costs = probe.costs;
  costs.link_bytes_per_second = slowest->bytes_per_second;
  costs.link_latency_seconds = slowest->latency_seconds;
  ASSIGN_OR_RETURN(costs.compute_seconds_per_sample,
                   worker::ComputeSecondsPerSample(options.model, options.activation,
                                                   options.device, options.batch_rows,
                                                   options.links.repeats));
  costs.sync_cpu_seconds_per_byte = worker::SyncCpuSecondsPerByte(options.links.repeats);
  costs.cores_per_process =
      static_cast<double>(worker::UsableCores()) / options.processes_per_host;
  costs.shard_bytes_per_second = worker::ShardBytesPerSecond(options.links.repeats);
  return probe;
}

absl::StatusOr<ClusterProbe> RunLoopbackProbe(ProbeOptions options, int members) {
  if (options.links.token.empty()) {
    ASSIGN_OR_RETURN(options.links.token, RandomSecret());
  }
  probe::LinkProbeService service(options.links.token);
  std::vector<StartedServer> servers;
  options.members.clear();
  for (int i = 0; i < members; ++i) {
    ASSIGN_OR_RETURN(StartedServer server,
                     StartServer("127.0.0.1:0", {&service}, options.links.security));
    options.members.push_back(absl::StrCat("127.0.0.1:", server.port));
    servers.push_back(std::move(server));
  }
  return RunClusterProbe(options);
}

}  // namespace ringside::cli
