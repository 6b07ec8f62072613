// `ringside lab`'s bound on each mode's sync: the cost model's per-node link loads
// (common/cost_model.h) at each link's own rate (--link_rate, and --slow_link for the hosts that
// have one), and one line per mode saying what it waits for: which node, its bytes, its rate.
// Pure; thread-safe. Errors: INVALID_ARGUMENT naming the flag and the bad item.
#ifndef RINGSIDE_CLI_LAB_BOUND_H_
#define RINGSIDE_CLI_LAB_BOUND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/compare_report.h"
#include "common/link_rate.h"

namespace ringside::cli {

// --slow_link's values (one per time the flag is given, each a comma list of HOST:RATE, RATE in
// tc syntax) as host -> rate. Refused: an item without ':', an empty host, a bad rate, a host
// given twice.
absl::StatusOr<std::map<std::string, LinkRate>> ParseSlowLinks(
    const std::vector<std::string>& values);

// Every --slow_link host must be one of the lab's `hosts` ("controller", "ps-0", "worker-3").
absl::Status CheckSlowLinkHosts(const std::map<std::string, LinkRate>& slow_links,
                                const std::vector<std::string>& hosts);

// The rates of one lab run: every host's link at `link_rate` but the `slow_links`.
struct LabRates {
  LinkRate link_rate;
  std::map<std::string, LinkRate> slow_links;
  const LinkRate& Of(const std::string& host) const;
};

// Fills report.bound_seconds_per_step, bottleneck_node and bottleneck for `report`'s mode on
// report.final_world workers and `shards` shards (ps; colocated when report.colocated).
void FillLabBound(const LabRates& rates, const JobConfig& config, int shards, ModeReport& report);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_LAB_BOUND_H_
