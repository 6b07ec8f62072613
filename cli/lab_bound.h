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
#include "absl/time/time.h"
#include "cli/report/compare_report.h"
#include "common/link_rate.h"
#include "common/training_options.h"

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

// The workers a ps step of `training` does not wait for among `workers`: backup workers' b (a
// step takes the first N - b pushes), async's N - 1 (a worker waits only for itself); else 0.
int WorkersNotWaitedFor(const TrainingOptions& training, int workers);

// Fills report.bound_seconds_per_step, bottleneck_node and bottleneck for `report`'s mode on
// report.final_world workers and `shards` shards (ps; colocated when report.colocated), leaving
// out the `not_waited_for` slowest workers' links (separate shards only: a colocated host also
// carries a shard). A compressed run (report.compression not "none") is bound by its links'
// expected bytes per step (report.links: the codec's bytes, exactly), each node by the busier
// direction of its own.
void FillLabBound(const LabRates& rates, const JobConfig& config, int shards, ModeReport& report,
                  int not_waited_for = 0);

// The workers' --timeout for a run of `workers` workers of a model of `parameters` parameters
// on `rates`' links: at least `floor`, and kLabTimeoutMargin times what the busiest link of any
// mode carries in a step (one shard's N float32 shares, in), at the slowest rate. A collective
// that waits past --timeout fails its step, so a fixed deadline would fail every step of a job
// whose busiest link needs longer (eight workers' pushes of the heavy model into one shard at
// 10mbit take about 50 s).
inline constexpr double kLabTimeoutMargin = 3;
absl::Duration LabCollectiveTimeout(const LabRates& rates, int workers, int64_t parameters,
                                    absl::Duration floor);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_LAB_BOUND_H_
