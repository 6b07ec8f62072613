// Why one mode beat the other, in one clause from measured figures: the bandwidth of the busiest
// node (its bytes per step, and the rate it achieved: bytes ÷ sync time), a lower achieved rate
// (rounds, latency or CPU per byte of sync), compute, evaluation contention, the update, waiting
// for a straggler, or taking fewer steps. The phase whose median per step (the mean where the
// trace has none) differs most between the two runs, in the winner's favour, is the one named;
// none ("spread") when even that one moved less than a quarter of the step medians' gap.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_VERDICT_REASON_H_
#define RINGSIDE_CLI_REPORT_VERDICT_REASON_H_

#include <string>

#include "cli/report/compare_report.h"

namespace ringside::cli {

struct DecidingTerm {
  // "bandwidth", "rate", "compute", "evaluation", "update", "straggler", "steps", "spread"
  std::string term;
  std::string clause;  // "ring: its busiest link carried 10.7 MiB/step against the shard's ..."
};

// `by_steps`: the time to target decided and the runs took different steps to it.
DecidingTerm ExplainWin(const JobConfig& config, const ModeReport& winner, const ModeReport& loser,
                        bool by_steps);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_VERDICT_REASON_H_
