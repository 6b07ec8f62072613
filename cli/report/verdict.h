// Which mode won one job's comparison, how sure that is, and why, as one sentence for the table,
// the report and the JSON's `winner` (docs/compare.md says how a user reads it).
//
// The deciding figure: where both modes reached the target test accuracy and both are
// synchronous (ring and synchronous ps compute the same sums), they take the same steps to it,
// so the time to target is those steps times the step time: the median step time decides. Where
// they took different steps (staleness, backup workers, a 16-bit wire's rounding), the measured
// time to target over the repeats decides. Where not both reached it (or the data has no test
// set), the median step time decides as throughput. Per-step figures leave out the warm-up steps
// (cli/report/step_figures.h).
//
// How sure: a winner is named only where the 95% percentile-bootstrap interval of the deciding
// ratio (cli/report/spread.h) excludes 1; the interval resamples the repeats' figures
// (--repeats=R, R >= 2) or, with one run per mode, that run's steps. Otherwise the line says
// there is no significant difference on this run set, with the interval.
//
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_VERDICT_H_
#define RINGSIDE_CLI_REPORT_VERDICT_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "cli/report/spread.h"

namespace ringside::cli {

inline constexpr double kVerdictConfidence = 0.95;

enum class Outcome {
  kWinner,     // the interval of the deciding ratio excludes 1
  kTie,        // it includes 1, or there is no interval (one reading each): no significant
               // difference on this run set
  kUndecided,  // a mode failed, or nothing comparable was measured
};

// What the verdict's interval resamples.
enum class IntervalOver { kNone, kRepeats, kSteps };

// Repeat i of each mode judged on its own (the same rule, over that pair's steps).
struct RepeatVerdict {
  Outcome outcome = Outcome::kUndecided;
  SyncMode winner = SyncMode::kRing;  // meaningful for kWinner
  RatioInterval interval;             // ps's figure ÷ ring's
};

struct Verdict {
  Outcome outcome = Outcome::kUndecided;
  SyncMode winner = SyncMode::kRing;  // meaningful for kWinner
  // The slower mode's figure over the faster's (>= 1): times to target, or step times.
  double ratio = 1;
  // "step_seconds" (the median step time) or "seconds_to_target" (the measured time to target).
  std::string basis;
  // ps's figure ÷ ring's (> 1: the ring was faster), with its interval, and what it resamples.
  RatioInterval interval;
  IntervalOver over = IntervalOver::kNone;
  int repeats = 1;
  // Both synchronous and both reached the target: whether every repeat took the same steps.
  std::optional<bool> same_steps;
  // kWinner: the term that decided it ("bandwidth", "rate", "compute", "evaluation", "update",
  // "straggler", "steps") and one clause saying so from measured figures.
  std::string term, reason;
  std::vector<RepeatVerdict> per_repeat;  // one per repeat, in run order
  std::string line;                       // one sentence for the table and the report
};

Verdict DecideWinner(const JobComparison& job);

// "95% interval 1.10–1.18×, bootstrap over the steps of one run per mode": how sure, in words,
// for a ratio shown as `faster`'s advantage.
std::string IntervalText(const Verdict& verdict);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_VERDICT_H_
