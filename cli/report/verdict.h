// Which mode won one job's comparison and by how much, as one sentence for the table, the
// report and the JSON's `winner`. Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_VERDICT_H_
#define RINGSIDE_CLI_REPORT_VERDICT_H_

#include <string>

#include "cli/report/compare_report.h"

namespace ringside::cli {

enum class Outcome {
  // both completed and one was faster by more than kTieTolerance: reached the target test
  // accuracy sooner where both reached it, else had the higher throughput
  kWinner,
  kTie,        // both completed within kTieTolerance of each other
  kUndecided,  // a mode failed or measured no throughput
};
inline constexpr double kTieTolerance = 0.02;

struct Verdict {
  Outcome outcome = Outcome::kUndecided;
  SyncMode winner = SyncMode::kRing;  // meaningful for kWinner
  // The winner's throughput over the loser's, or the loser's time to target over the winner's
  // (>= 1).
  double ratio = 1;
  std::string basis;  // "seconds_to_target", "samples_per_second" or "step_p50"
  std::string line;   // one sentence for the table and the report
};

// By the time to the target test accuracy when both modes reached it (sooner wins); else by
// samples/s (higher wins), or step time p50 when a mode reports no samples/s, saying which modes
// reached the target where the data has a test set.
Verdict DecideWinner(const JobComparison& job);
}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_VERDICT_H_
