#include "cli/cluster_probe_run.h"

#include <algorithm>
#include <limits>
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

// Each member's profile of itself (the first's only where they share a host), one after
// another, since a profile times the cores it is given; the costs are the slowest member's.
absl::Status ProfileMembers(const ProbeOptions& options, ClusterProbe& probe) {
  proto::ProfileRequest request;
  request.set_model(options.model);
  request.set_activation(options.activation);
  request.set_batch_rows(options.batch_rows);
  request.set_repeats(options.links.repeats);
  const size_t profiled = options.profile_each_member ? options.members.size() : 1;
  ClusterCosts& costs = probe.costs;
  costs.compute_seconds_per_sample = 0;  // every profile's figures are positive (CheckProfile)
  costs.sync_cpu_seconds_per_byte = 0;
  costs.shard_bytes_per_second = std::numeric_limits<double>::infinity();
  double fewest_cores = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < profiled; ++i) {
    ASSIGN_OR_RETURN(
        const proto::MemberProfile profile,
        probe::ProfileMember(options.members[i], request, options.links, options.profile_timeout));
    LinkProbe& link = probe.links[i];
    link.device = profile.device();
    link.compute_seconds_per_sample = profile.compute_seconds_per_sample();
    link.usable_cores = profile.usable_cores();
    if (profile.compute_seconds_per_sample() > costs.compute_seconds_per_sample) {
      costs.compute_seconds_per_sample = profile.compute_seconds_per_sample();
      probe.device = profile.device();
    }
    costs.sync_cpu_seconds_per_byte =
        std::max(costs.sync_cpu_seconds_per_byte, profile.sync_cpu_seconds_per_byte());
    costs.shard_bytes_per_second =
        std::min(costs.shard_bytes_per_second, profile.shard_bytes_per_second());
    fewest_cores = std::min(fewest_cores, profile.usable_cores());
  }
  costs.cores_per_process = fewest_cores / options.processes_per_host;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterProbe> RunClusterProbe(const ProbeOptions& options) {
  RETURN_IF_ERROR(CheckProbeOptions(options));
  ClusterProbe probe;
  probe.model = options.model;
  probe.activation = options.activation;
  ASSIGN_OR_RETURN(probe.links, ProbeLinks(options));
  const auto slowest = std::min_element(probe.links.begin(), probe.links.end(),
                                        [](const LinkProbe& a, const LinkProbe& b) {
                                          return a.bytes_per_second < b.bytes_per_second;
                                        });
  probe.costs.link_bytes_per_second = slowest->bytes_per_second;
  probe.costs.link_latency_seconds = slowest->latency_seconds;
  RETURN_IF_ERROR(ProfileMembers(options, probe));
  return probe;
}

absl::StatusOr<ClusterProbe> RunLoopbackProbe(ProbeOptions options, int members) {
  if (options.links.token.empty()) {
    ASSIGN_OR_RETURN(options.links.token, RandomSecret());
  }
  probe::LinkProbeService service(options.links.token,
                                  [device = options.device](const proto::ProfileRequest& request) {
                                    return worker::ProfileThisProcess(request, device);
                                  });
  std::vector<StartedServer> servers;
  options.members.clear();
  options.profile_each_member = false;  // every member is this process
  for (int i = 0; i < members; ++i) {
    ASSIGN_OR_RETURN(StartedServer server,
                     StartServer("127.0.0.1:0", {&service}, options.links.security));
    options.members.push_back(absl::StrCat("127.0.0.1:", server.port));
    servers.push_back(std::move(server));
  }
  return RunClusterProbe(options);
}

}  // namespace ringside::cli
