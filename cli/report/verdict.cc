// DecideWinner (cli/report/verdict.h): which mode won one job's comparison, and the line that
// says so.
#include "cli/report/verdict.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/format_units.h"

namespace ringside::cli {
namespace {

std::string VerdictDetails(const JobComparison& job) {
  return absl::StrCat("samples/s ring ", ShortNumber(job.ring.samples_per_second), " vs ps ",
                      ShortNumber(job.ps.samples_per_second), "; step p50 ring ",
                      HumanSeconds(job.ring.step_p50), " vs ps ", HumanSeconds(job.ps.step_p50));
}

// Both reached the target: the sooner wins.
Verdict ByTimeToTarget(const JobComparison& job) {
  Verdict verdict;
  const double ring = *job.ring.seconds_to_target, ps = *job.ps.seconds_to_target;
  verdict.basis = "seconds_to_target";
  verdict.winner = ring <= ps ? SyncMode::kRing : SyncMode::kPs;
  verdict.ratio = std::max(ring, ps) / std::min(ring, ps);
  const std::string target = TargetText(job.config);
  const std::string details =
      absl::StrCat("ring ", HumanSeconds(ring), " at step ",
                   WithThousands(*job.ring.steps_to_target), ", ps ", HumanSeconds(ps), " at step ",
                   WithThousands(*job.ps.steps_to_target), "; ", VerdictDetails(job));
  if (verdict.ratio - 1 <= kTieTolerance) {
    verdict.outcome = Outcome::kTie;
    verdict.line = absl::StrFormat(
        "A tie on this run: ring and ps reached %s test accuracy within %.0f%% of each other's "
        "time (%s).",
        target, kTieTolerance * 100, details);
    return verdict;
  }
  verdict.outcome = Outcome::kWinner;
  const SyncMode loser = verdict.winner == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
  verdict.line = absl::StrFormat(
      "Winner on this run: %s, reaching %s test accuracy %.2f\u00d7 as soon as %s (%s).",
      SyncModeName(verdict.winner), target, verdict.ratio, SyncModeName(loser), details);
  return verdict;
}

// Where the data has a test set but not both modes reached the target: which did.
std::string TargetNote(const JobComparison& job) {
  if (!job.config.has_test_set) return "";
  const std::string target = TargetText(job.config);
  const bool ring = job.ring.seconds_to_target.has_value();
  const bool ps = job.ps.seconds_to_target.has_value();
  if (!ring && !ps) {
    return absl::StrCat(" Neither mode reached ", target, " test accuracy within ",
                        WithThousands(job.config.steps), " steps.");
  }
  const ModeReport& reached = ring ? job.ring : job.ps;
  return absl::StrCat(" Only ", SyncModeName(reached.mode), " reached ", target, " test accuracy (",
                      HumanSeconds(*reached.seconds_to_target), ", step ",
                      WithThousands(reached.steps_to_target.value_or(0)), ").");
}

// By throughput: samples/s, or 1/p50 when a rate is missing.
Verdict ByThroughput(const JobComparison& job) {
  Verdict verdict;
  double ring = job.ring.samples_per_second, ps = job.ps.samples_per_second;
  verdict.basis = "samples_per_second";
  if (ring <= 0 || ps <= 0) {
    if (job.ring.step_p50 <= 0 || job.ps.step_p50 <= 0) {
      verdict.basis.clear();
      verdict.line = "No winner: neither samples/s nor step times were measured for both modes.";
      return verdict;
    }
    ring = 1 / job.ring.step_p50;
    ps = 1 / job.ps.step_p50;
    verdict.basis = "step_p50";
  }
  verdict.winner = ring >= ps ? SyncMode::kRing : SyncMode::kPs;
  verdict.ratio = std::max(ring, ps) / std::min(ring, ps);
  const std::string what = verdict.basis == "samples_per_second" ? "samples/s" : "step rate";
  if (verdict.ratio - 1 <= kTieTolerance) {
    verdict.outcome = Outcome::kTie;
    verdict.line =
        absl::StrFormat("A tie on this run: ring and ps within %.0f%% of each other (%s).",
                        kTieTolerance * 100, VerdictDetails(job));
    return verdict;
  }
  verdict.outcome = Outcome::kWinner;
  const SyncMode loser = verdict.winner == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
  verdict.line = absl::StrFormat("Winner on this run: %s, %.2f\u00d7 the %s of %s (%s).",
                                 SyncModeName(verdict.winner), verdict.ratio, what,
                                 SyncModeName(loser), VerdictDetails(job));
  return verdict;
}

}  // namespace

Verdict DecideWinner(const JobComparison& job) {
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    if (!mode->completed) {
      Verdict verdict;
      verdict.line = absl::StrCat("No winner: the ", SyncModeName(mode->mode), " run failed (",
                                  mode->failure.empty() ? "no reason given" : mode->failure, ").");
      return verdict;
    }
  }
  // Time to target needs both times, and both above zero to make a ratio (a target the initial
  // parameters already meet is no race).
  if (job.ring.seconds_to_target.value_or(0) > 0 && job.ps.seconds_to_target.value_or(0) > 0) {
    return ByTimeToTarget(job);
  }
  Verdict verdict = ByThroughput(job);
  verdict.line += TargetNote(job);
  return verdict;
}

}  // namespace ringside::cli
