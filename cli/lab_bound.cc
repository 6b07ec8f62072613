#include "cli/lab_bound.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "common/cost_model.h"
#include "server/ps/sync_rules.h"

namespace ringside::cli {
namespace {

// A compressed run's codec text; empty for an uncompressed one.
std::string CodecOf(const ModeReport& report) {
  return report.compression == "none" ? "" : report.compression;
}

// The cost model's formula for what `node` carries each way in `report`'s mode, with `bytes`
// per element: the words a user checks the figure against.
std::string LoadFormula(const ModeReport& report, const std::string& node, int element_bytes) {
  if (!CodecOf(report).empty()) {
    return absl::StrCat("the ", CodecOf(report), " codec's bytes on its links");
  }
  if (report.mode == SyncMode::kRing || report.colocated) {
    return absl::StrCat("2(N\u22121)/N\u00b7K\u00b7", element_bytes, " B");
  }
  if (node.rfind("ps-", 0) == 0) return absl::StrCat("N\u00b7K/S\u00b7", element_bytes, " B");
  return absl::StrCat("K\u00b7", element_bytes, " B");
}

// Why that node is the one waited for, in the mode's own terms.
std::string WaitReason(const ModeReport& report, const std::string& node, int not_waited_for) {
  if (report.mode == SyncMode::kRing) {
    return "every ring step moves a chunk on every link at once, so each waits for the slowest";
  }
  if (report.colocated) {
    return absl::StrCat(node, " and its shard share that link; their own traffic never crosses it");
  }
  if (not_waited_for > 0) {
    return absl::StrCat("a step ends once the first N\u2212", not_waited_for,
                        " workers have pushed K and every shard has answered; the ", not_waited_for,
                        " slowest workers' links pace only themselves");
  }
  return "a step ends when every worker has pushed K and every shard has answered N\u00b7K/S";
}

// `loads` without the `count` workers whose links take longest at their rates.
std::vector<NodeLinkLoad> WithoutSlowestWorkers(std::vector<NodeLinkLoad> loads, int count,
                                                const LabRates& rates) {
  if (count <= 0) return loads;
  const auto seconds = [&](const NodeLinkLoad& load) {
    return static_cast<double>(load.elements) / rates.Of(load.node).bytes_per_second();
  };
  for (int dropped = 0; dropped < count; ++dropped) {
    auto slowest = loads.end();
    for (auto it = loads.begin(); it != loads.end(); ++it) {
      if (it->node.rfind("worker-", 0) != 0) continue;
      // Ties: the last such worker.
      if (slowest == loads.end() || seconds(*it) >= seconds(*slowest)) slowest = it;
    }
    if (slowest == loads.end()) break;
    loads.erase(slowest);
  }
  return loads;
}

// A compressed run's load on each node's link, in bytes (the busier direction): its links'
// expected bytes per step, which are the codec's exactly (CompressedLinkBytes, and the
// uncompressed warm-up steps), workers first in rank order, then the shards.
std::vector<NodeLinkLoad> LoadsOfLinks(const std::vector<LinkTraffic>& links) {
  std::map<std::string, std::pair<double, double>> in_out;
  for (const LinkTraffic& link : links) {
    in_out[link.dst].first += link.expected_bytes_per_step;
    in_out[link.src].second += link.expected_bytes_per_step;
  }
  std::vector<NodeLinkLoad> loads;
  for (const char* role : {"worker-", "ps-"}) {
    for (int index = 0;; ++index) {
      const auto node = in_out.find(absl::StrCat(role, index));
      if (node == in_out.end()) break;
      const double busier = std::max(node->second.first, node->second.second);
      loads.push_back({node->first, static_cast<uint64_t>(std::llround(busier))});
    }
  }
  return loads;
}

}  // namespace

absl::StatusOr<std::map<std::string, LinkRate>> ParseSlowLinks(
    const std::vector<std::string>& values) {
  std::map<std::string, LinkRate> links;
  for (const std::string& value : values) {
    for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      const std::vector<absl::string_view> parts = absl::StrSplit(item, absl::MaxSplits(':', 1));
      if (parts.size() != 2 || parts[0].empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--slow_link: '", item, "' is not HOST:RATE (e.g. worker-3:20mbit)"));
      }
      absl::StatusOr<LinkRate> rate = ParseLinkRate(parts[1]);
      if (!rate.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--slow_link: ", parts[0], ": ", rate.status().message()));
      }
      if (!links.emplace(std::string(parts[0]), *rate).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("--slow_link: ", parts[0], " is given more than once"));
      }
    }
  }
  return links;
}

absl::Status CheckSlowLinkHosts(const std::map<std::string, LinkRate>& slow_links,
                                const std::vector<std::string>& hosts) {
  for (const auto& [host, rate] : slow_links) {
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--slow_link: '", host,
                       "' is not a host of this lab; its hosts: ", absl::StrJoin(hosts, ", ")));
    }
  }
  return absl::OkStatus();
}

const LinkRate& LabRates::Of(const std::string& host) const {
  const auto own = slow_links.find(host);
  return own == slow_links.end() ? link_rate : own->second;
}

int WorkersNotWaitedFor(const TrainingOptions& training, int workers) {
  if (training.staleness == kAsyncStaleness) return std::max(0, workers - 1);
  if (training.staleness == 0 && training.backup_workers > 0) {
    return workers - server::BackupQuorum(workers, training.backup_workers);
  }
  return 0;
}

void FillLabBound(const LabRates& rates, const JobConfig& config, int shards, ModeReport& report,
                  int not_waited_for) {
  const PsPlacement placement = report.colocated ? PsPlacement::kColocated : PsPlacement::kSeparate;
  if (report.mode != SyncMode::kPs || report.colocated) not_waited_for = 0;
  // A codec's bytes are not K's elements at a width: its run's own links say them (in bytes).
  const bool compressed = !CodecOf(report).empty();
  const SyncBottleneck bottleneck = FindSyncBottleneck(
      WithoutSlowestWorkers(compressed ? LoadsOfLinks(report.links)
                                       : NodeLinkLoads(report.mode, placement,
                                                       static_cast<uint64_t>(config.parameters),
                                                       report.final_world, shards),
                            not_waited_for, rates),
      compressed ? 1 : config.element_bytes,
      [&](const std::string& node) { return rates.Of(node).bytes_per_second(); });
  report.bound_seconds_per_step = bottleneck.seconds;
  report.bottleneck_node = bottleneck.node;
  if (bottleneck.node.empty()) {
    report.bottleneck = absl::StrCat(RunName(report), ": no link carries anything");
    return;
  }
  report.bottleneck =
      absl::StrCat(RunName(report), ": every step waits for ", bottleneck.node,
                   "'s link: ", LoadFormula(report, bottleneck.node, config.element_bytes), " = ",
                   HumanBytes(static_cast<double>(bottleneck.bytes)), " each way at ",
                   rates.Of(bottleneck.node).text, ", ", HumanSeconds(bottleneck.seconds), " (",
                   WaitReason(report, bottleneck.node, not_waited_for), ")");
}

absl::Duration LabCollectiveTimeout(const LabRates& rates, int workers, int64_t parameters,
                                    absl::Duration floor) {
  double slowest = rates.link_rate.payload_bytes_per_second();
  for (const auto& [host, rate] : rates.slow_links) {
    slowest = std::min(slowest, rate.payload_bytes_per_second());
  }
  const double busiest_bytes = static_cast<double>(std::max(workers, 1)) *
                               static_cast<double>(std::max<int64_t>(parameters, 0)) *
                               sizeof(float);
  return std::max(floor, absl::Seconds(kLabTimeoutMargin * busiest_bytes / slowest));
}

}  // namespace ringside::cli
