// DecideWinner (cli/report/verdict.h): which mode won one job's comparison, how sure that is and
// why, and the line that says so.
#include "cli/report/verdict.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/format_units.h"
#include "cli/report/repeats.h"
#include "cli/report/verdict_reason.h"

namespace ringside::cli {
namespace {

const char* Name(SyncMode mode) { return SyncModeName(mode).data(); }

SyncMode Other(SyncMode mode) { return mode == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing; }

const ModeReport& Report(const JobComparison& job, SyncMode mode) {
  return mode == SyncMode::kRing ? job.ring : job.ps;
}

std::vector<double> Each(const ModeReport& mode, double (*figure)(const ModeReport&)) {
  std::vector<double> values;
  for (const ModeReport* run : RunsOf(mode)) values.push_back(figure(*run));
  return values;
}

double StepP50(const ModeReport& m) { return m.step_p50; }
double SecondsToTarget(const ModeReport& m) { return m.seconds_to_target.value_or(0); }

bool Repeated(const JobComparison& job) {
  return RunsOf(job.ring).size() >= 2 && RunsOf(job.ps).size() >= 2;
}

// ps's median step time ÷ ring's: over the repeats' medians, or the steps of one run each.
RatioInterval StepTimeInterval(const JobComparison& job, IntervalOver& over) {
  const BootstrapOptions options{.confidence = kVerdictConfidence};
  if (Repeated(job)) {
    over = IntervalOver::kRepeats;
    return BootstrapRatioOfMedians(Each(job.ps, StepP50), Each(job.ring, StepP50), options);
  }
  over = IntervalOver::kSteps;
  return BootstrapRatioOfMedians(job.ps.step_seconds, job.ring.step_seconds, options);
}

// Two runs' steps to the target, as their evaluations saw them, are the same steps: equal, or
// within one evaluation interval. A ps evaluation reads the shards while the next step runs, so
// it may see step 51 for the evaluation due after step 50; the ring's copies its own parameters
// at the step's end.
bool SameEvaluation(const std::optional<int64_t>& a, const std::optional<int64_t>& b,
                    int64_t eval_every) {
  if (a == b) return true;
  return a.has_value() && b.has_value() && eval_every > 0 && std::abs(*a - *b) < eval_every;
}

// Every repeat of both took the same steps to the target.
bool SameSteps(const JobComparison& job) {
  const std::vector<const ModeReport*> ring = RunsOf(job.ring), ps = RunsOf(job.ps);
  for (size_t i = 0; i < ring.size() && i < ps.size(); ++i) {
    if (!SameEvaluation(ring[i]->steps_to_target, ps[i]->steps_to_target, job.config.eval_every)) {
      return false;
    }
  }
  return ring.size() == ps.size();
}

// The outcome and winner from the interval (ps ÷ ring: above 1, the ring was faster).
void Settle(Verdict& verdict) {
  const double r = verdict.interval.ratio;
  verdict.ratio = r >= 1 ? r : 1 / r;
  verdict.winner = r >= 1 ? SyncMode::kRing : SyncMode::kPs;
  verdict.outcome = verdict.interval.Excludes(1) ? Outcome::kWinner : Outcome::kTie;
}

// Where the data has a test set but not both modes reached the target: which did.
std::string TargetNote(const JobComparison& job) {
  if (!job.config.has_test_set) return "";
  const std::string target = TargetText(job.config);
  const bool ring = job.ring.seconds_to_target.has_value();
  const bool ps = job.ps.seconds_to_target.has_value();
  if (ring && ps) return "";
  if (!ring && !ps) {
    return absl::StrCat(" Neither mode reached ", target, " test accuracy within ",
                        WithThousands(job.config.steps), " steps.");
  }
  const ModeReport& reached = ring ? job.ring : job.ps;
  return absl::StrCat(" Only ", SyncModeName(reached.mode), " reached ", target, " test accuracy (",
                      HumanSeconds(*reached.seconds_to_target), ", step ",
                      WithThousands(reached.steps_to_target.value_or(0)), ").");
}

std::string StepDetails(const JobComparison& job) {
  return absl::StrCat("step p50 ring ", HumanSeconds(job.ring.step_p50), " vs ps ",
                      HumanSeconds(job.ps.step_p50), ", samples/s ring ",
                      ShortNumber(job.ring.samples_per_second), " vs ps ",
                      ShortNumber(job.ps.samples_per_second));
}

// Same-step synchronous modes: steps to target × the step time (the fewer of the two where an
// evaluation saw its parameters a step late).
std::string SameStepDetails(const JobComparison& job) {
  const int64_t ring = *job.ring.steps_to_target, ps = *job.ps.steps_to_target;
  const int64_t steps = std::min(ring, ps);
  const std::string late =
      ring == ps ? ""
                 : absl::StrCat("; ", ring > ps ? "ring" : "ps", "'s evaluation read step ",
                                WithThousands(std::max(ring, ps)),
                                ", being taken as the next "
                                "step ran");
  return absl::StrCat("both took ", WithThousands(steps),
                      " steps to it (synchronous: the same sums", late,
                      "), so its time is those steps "
                      "\u00d7 the step time: ring \u2248 ",
                      HumanSeconds(steps * job.ring.step_p50), ", ps \u2248 ",
                      HumanSeconds(steps * job.ps.step_p50), " (", StepDetails(job), ")");
}

void AddReason(const JobComparison& job, Verdict& verdict) {
  if (verdict.outcome != Outcome::kWinner) return;
  const DecidingTerm term =
      ExplainWin(job.config, Report(job, verdict.winner), Report(job, Other(verdict.winner)),
                 verdict.basis == "seconds_to_target");
  verdict.term = term.term;
  verdict.reason = term.clause;
}

std::string Because(const Verdict& verdict) {
  return verdict.reason.empty() ? "" : absl::StrCat("; deciding: ", verdict.reason);
}

// The median step time decides: same-step synchronous modes' time to target, or throughput.
void ByStepTime(const JobComparison& job, bool to_target, Verdict& verdict) {
  verdict.basis = "step_seconds";
  verdict.interval = StepTimeInterval(job, verdict.over);
  if (!verdict.interval.valid) {
    verdict.basis.clear();
    verdict.over = IntervalOver::kNone;
    verdict.line = "No winner: step times were not measured for both modes.";
    return;
  }
  Settle(verdict);
  AddReason(job, verdict);
  const std::string target = TargetText(job.config);
  const std::string details = to_target ? SameStepDetails(job) : StepDetails(job);
  const std::string how = IntervalText(verdict);
  if (verdict.outcome == Outcome::kTie) {
    verdict.line = absl::StrFormat(
        "No significant difference on this run set: %s's steps take %.2f\u00d7 %s's (%s; it "
        "includes 1): %s.",
        Name(Other(verdict.winner)), verdict.ratio, Name(verdict.winner), how, details);
  } else if (to_target) {
    verdict.line = absl::StrFormat(
        "Winner: %s, reaching %s test accuracy %.2f\u00d7 as soon as %s (%s): %s%s.",
        Name(verdict.winner), target, verdict.ratio, Name(Other(verdict.winner)), how, details,
        Because(verdict));
  } else {
    verdict.line = absl::StrFormat("Winner: %s, %.2f\u00d7 the step rate of %s (%s): %s%s.",
                                   Name(verdict.winner), verdict.ratio, Name(Other(verdict.winner)),
                                   how, details, Because(verdict));
  }
  verdict.line += TargetNote(job);
}

// Different steps to the target (or a sync mode that is not synchronous): the measured time to
// target over the repeats decides; one reading each gives no interval.
void ByTimeToTarget(const JobComparison& job, Verdict& verdict) {
  verdict.basis = "seconds_to_target";
  const std::string target = TargetText(job.config);
  std::string details = absl::StrCat(
      "time to ", target, " ring ", HumanSeconds(*job.ring.seconds_to_target), " (step ",
      WithThousands(job.ring.steps_to_target.value_or(0)), ") vs ps ",
      HumanSeconds(*job.ps.seconds_to_target), " (step ",
      WithThousands(job.ps.steps_to_target.value_or(0)), ")", Repeated(job) ? ", medians" : "");
  if (verdict.same_steps == false) {
    absl::StrAppend(&details, "; both are synchronous, yet they took different steps to it");
  }
  if (Repeated(job)) {
    verdict.over = IntervalOver::kRepeats;
    verdict.interval =
        BootstrapRatioOfMedians(Each(job.ps, SecondsToTarget), Each(job.ring, SecondsToTarget),
                                {.confidence = kVerdictConfidence});
  }
  if (!verdict.interval.valid) {
    verdict.over = IntervalOver::kNone;
    verdict.outcome = Outcome::kTie;
    const double r = *job.ps.seconds_to_target / *job.ring.seconds_to_target;
    verdict.interval.ratio = r;
    verdict.ratio = r >= 1 ? r : 1 / r;
    verdict.winner = r >= 1 ? SyncMode::kRing : SyncMode::kPs;
    verdict.line = absl::StrCat(
        "No significant difference can be claimed from one run per mode: their steps to ", target,
        " differ, so only the measured times to it can decide, and one reading each gives no "
        "interval (",
        details, "); --repeats=5 gives one.");
    return;
  }
  Settle(verdict);
  AddReason(job, verdict);
  const std::string how = IntervalText(verdict);
  if (verdict.outcome == Outcome::kTie) {
    verdict.line = absl::StrFormat(
        "No significant difference on this run set: %s took %.2f\u00d7 %s's time to %s test "
        "accuracy (%s; it includes 1): %s.",
        Name(Other(verdict.winner)), verdict.ratio, Name(verdict.winner), target, how, details);
    return;
  }
  verdict.line =
      absl::StrFormat("Winner: %s, reaching %s test accuracy %.2f\u00d7 as soon as %s (%s): %s%s.",
                      Name(verdict.winner), target, verdict.ratio, Name(Other(verdict.winner)), how,
                      details, Because(verdict));
}

// Each repeat's pair of runs on its own: by its steps' times, or its one time to target each.
std::vector<RepeatVerdict> PerRepeat(const JobComparison& job, const std::string& basis) {
  std::vector<RepeatVerdict> verdicts;
  const std::vector<const ModeReport*> ring = RunsOf(job.ring), ps = RunsOf(job.ps);
  for (size_t i = 0; i < ring.size() && i < ps.size(); ++i) {
    RepeatVerdict& repeat = verdicts.emplace_back();
    if (!ring[i]->completed || !ps[i]->completed) continue;
    if (basis == "seconds_to_target") {
      repeat.interval.ratio = SecondsToTarget(*ps[i]) / SecondsToTarget(*ring[i]);
      repeat.outcome = Outcome::kTie;  // one reading each: no interval
    } else {
      repeat.interval = BootstrapRatioOfMedians(ps[i]->step_seconds, ring[i]->step_seconds,
                                                {.confidence = kVerdictConfidence});
      if (!repeat.interval.valid) continue;
      repeat.outcome = repeat.interval.Excludes(1) ? Outcome::kWinner : Outcome::kTie;
    }
    repeat.winner = repeat.interval.ratio >= 1 ? SyncMode::kRing : SyncMode::kPs;
  }
  return verdicts;
}

}  // namespace

std::string IntervalText(const Verdict& verdict) {
  const RatioInterval& i = verdict.interval;
  if (!i.valid) return "no interval";
  // Shown as the slower's figure over the faster's, as the ratio is.
  const bool flip = i.ratio < 1;
  const double low = flip ? 1 / i.high : i.low, high = flip ? 1 / i.low : i.high;
  const std::string over =
      verdict.over == IntervalOver::kRepeats
          ? absl::StrCat("bootstrap over ", verdict.repeats, " repeats per mode")
          : "bootstrap over the steps of one run per mode, which leaves out run-to-run drift";
  return absl::StrFormat("%.0f%% interval %.2f\u2013%.2f\u00d7, %s", i.confidence * 100, low, high,
                         over);
}

Verdict DecideWinner(const JobComparison& job) {
  Verdict verdict;
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    if (!mode->completed) {
      verdict.line = absl::StrCat("No winner: the ", SyncModeName(mode->mode), " run failed (",
                                  mode->failure.empty() ? "no reason given" : mode->failure, ").");
      return verdict;
    }
  }
  verdict.repeats = static_cast<int>(std::max(RunsOf(job.ring).size(), RunsOf(job.ps).size()));
  // Time to target needs both times, and both above zero to make a ratio (a target the initial
  // parameters already meet is no race).
  const bool reached =
      job.ring.seconds_to_target.value_or(0) > 0 && job.ps.seconds_to_target.value_or(0) > 0;
  const bool synchronous = job.ring.synchronous && job.ps.synchronous;
  if (reached && synchronous) verdict.same_steps = SameSteps(job);
  if (reached && verdict.same_steps != true) {
    ByTimeToTarget(job, verdict);
  } else {
    ByStepTime(job, reached, verdict);
  }
  verdict.per_repeat = PerRepeat(job, verdict.basis);
  return verdict;
}

}  // namespace ringside::cli
