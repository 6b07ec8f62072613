// The verdict on recorded figures (no timing): a winner only where the interval of the deciding
// ratio excludes 1, same-step synchronous modes decided by step time rather than one wall-clock
// reading, the measured time to target over repeats where the steps differ, and the deciding
// term named from measured figures.
#include "cli/report/verdict.h"

#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "cli/report/repeats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// One run of `mode` whose steady steps have median `step` (±5%), over the job's phases.
ModeReport Run(const ModeReport& like, double step, int seed) {
  ModeReport run = like;
  run.step_seconds = testing::StepTimes(step, 0.1, 95 + 2 * seed);
  run.step_p50 = step;
  run.samples_per_second = 64 / step;
  return run;
}

// The job with R repeats of each mode: ring's median steps at `ring[i]`, ps's at `ps[i]`.
JobComparison Repeated(JobComparison job, const std::vector<double>& ring,
                       const std::vector<double>& ps) {
  std::vector<JobComparison> rounds;
  for (size_t i = 0; i < ring.size(); ++i) {
    JobComparison round = job;
    round.ring = Run(job.ring, ring[i], static_cast<int>(i));
    round.ps = Run(job.ps, ps[i], static_cast<int>(i));
    rounds.push_back(round);
  }
  return MergeRounds(rounds);
}

TEST(VerdictTest, IdenticalDistributionsAreNoSignificantDifference) {
  JobComparison job = testing::SyntheticJob();
  job.ps.step_seconds = job.ring.step_seconds;
  job.ps.step_p50 = job.ring.step_p50;
  Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.outcome, Outcome::kTie);
  EXPECT_EQ(verdict.over, IntervalOver::kSteps);
  EXPECT_LE(verdict.interval.low, 1.0);
  EXPECT_GE(verdict.interval.high, 1.0);
  EXPECT_THAT(verdict.line, HasSubstr("No significant difference on this run set"));
  EXPECT_THAT(verdict.line, HasSubstr("95% interval"));
  EXPECT_THAT(verdict.line, Not(HasSubstr("Winner")));

  // Over repeats: the same three medians in both modes.
  verdict = DecideWinner(Repeated(testing::SyntheticJob(), {0.20, 0.22, 0.21}, {0.21, 0.20, 0.22}));
  EXPECT_EQ(verdict.outcome, Outcome::kTie);
  EXPECT_EQ(verdict.over, IntervalOver::kRepeats);
  EXPECT_EQ(verdict.repeats, 3);
  EXPECT_THAT(verdict.line, HasSubstr("bootstrap over 3 repeats per mode"));
}

TEST(VerdictTest, AClear1_3xGapNamesTheFasterMode) {
  // ps 1.3x slower per step, over the steps of one run each.
  JobComparison job = testing::SyntheticJob();
  job.ps.step_seconds = testing::StepTimes(0.273, 0.2, 95);
  job.ps.step_p50 = 0.273;
  Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.outcome, Outcome::kWinner);
  EXPECT_EQ(verdict.winner, SyncMode::kRing);
  EXPECT_NEAR(verdict.ratio, 1.3, 0.01);
  EXPECT_GT(verdict.interval.low, 1.0);
  EXPECT_THAT(verdict.line, HasSubstr("Winner: ring, 1.30\u00d7 the step rate of ps"));
  EXPECT_THAT(verdict.line, HasSubstr("which leaves out run-to-run drift"));

  // And the other way round over five repeats, each with its own noise.
  verdict = DecideWinner(Repeated(testing::SyntheticJob(), {0.26, 0.27, 0.28, 0.265, 0.275},
                                  {0.20, 0.21, 0.205, 0.215, 0.21}));
  EXPECT_EQ(verdict.outcome, Outcome::kWinner);
  EXPECT_EQ(verdict.winner, SyncMode::kPs);
  EXPECT_NEAR(verdict.ratio, 0.27 / 0.21, 1e-9);
  EXPECT_EQ(verdict.over, IntervalOver::kRepeats);
  ASSERT_EQ(verdict.per_repeat.size(), 5u);
  for (const RepeatVerdict& repeat : verdict.per_repeat) {
    EXPECT_EQ(repeat.outcome, Outcome::kWinner);
    EXPECT_EQ(repeat.winner, SyncMode::kPs);
  }
}

TEST(VerdictTest, OverlappingRepeatsAreNotAWinEvenWhereTheMediansDiffer) {
  // Medians 0.21 vs 0.22, but the runs overlap: three readings cannot tell them apart.
  const Verdict verdict =
      DecideWinner(Repeated(testing::SyntheticJob(), {0.20, 0.21, 0.23}, {0.19, 0.22, 0.24}));
  EXPECT_EQ(verdict.outcome, Outcome::kTie);
  EXPECT_THAT(verdict.line, HasSubstr("; it includes 1)"));
}

// The demo's case: both took 50 steps to the target, the ring's steps are 14% faster, but one
// wall-clock reading (start-up, the machine's other work) has the ps there first.
TEST(VerdictTest, SameStepSyncModesAreDecidedByStepTimeNotOneWallClockReading) {
  JobComparison job = testing::FashionMnistJob();
  job.ring.step_seconds = testing::StepTimes(0.0777, 0.2, 195);
  job.ring.step_p50 = 0.0777;
  job.ps.step_seconds = testing::StepTimes(0.0900, 0.2, 195);
  job.ps.step_p50 = 0.0900;
  job.ring.seconds_to_target = 4.82;
  job.ps.seconds_to_target = 4.65;
  job.ring.steps_to_target = job.ps.steps_to_target = 50;
  const Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.basis, "step_seconds");
  EXPECT_EQ(verdict.same_steps, true);
  EXPECT_EQ(verdict.outcome, Outcome::kWinner);
  EXPECT_EQ(verdict.winner, SyncMode::kRing);
  EXPECT_NEAR(verdict.ratio, 0.0900 / 0.0777, 0.005);
  EXPECT_THAT(verdict.line,
              HasSubstr("Winner: ring, reaching 75% test accuracy 1.16\u00d7 as soon"));
  EXPECT_THAT(verdict.line, HasSubstr("both took 50 steps to it (synchronous: the same sums)"));
}

// A ps evaluation reads the shards while the next step runs: the one due after step 150 may see
// step 151. Within one evaluation interval the steps are the same, the fewer are timed, and the
// line says which evaluation read late.
TEST(VerdictTest, AnEvaluationThatReadTheNextStepStillCountsAsTheSameSteps) {
  JobComparison job = testing::FashionMnistJob();  // evaluations every 25 steps
  job.ps.steps_to_target = 151;
  Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.same_steps, true);
  EXPECT_EQ(verdict.basis, "step_seconds");
  EXPECT_THAT(verdict.line, HasSubstr("both took 150 steps to it (synchronous: the same sums; ps's "
                                      "evaluation read step 151"));
  job.ps.steps_to_target = 175;  // the next evaluation: not the same steps
  verdict = DecideWinner(job);
  EXPECT_EQ(verdict.same_steps, false);
}

TEST(VerdictTest, SyncModesThatTookDifferentStepsSayItAndTheMeasuredTimesDecide) {
  JobComparison job = testing::FashionMnistJob();
  job.ps.steps_to_target = 175;  // e.g. a 16-bit wire's rounding
  Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.same_steps, false);
  EXPECT_EQ(verdict.basis, "seconds_to_target");
  EXPECT_EQ(verdict.outcome, Outcome::kTie);  // one reading each: no interval
  EXPECT_FALSE(verdict.interval.valid);
  EXPECT_THAT(verdict.line, HasSubstr("both are synchronous, yet they took different steps"));
  EXPECT_THAT(verdict.line, HasSubstr("--repeats=5"));
}

// Staleness: not the same sums, so the time to target over the repeats decides, whatever the
// step time says.
TEST(VerdictTest, ModesWithDifferentStepsAreDecidedByTimeToTargetOverRepeats) {
  JobComparison base = testing::FashionMnistJob();
  base.ps.synchronous = false;
  std::vector<JobComparison> rounds;
  const double ring[] = {12.0, 12.5, 11.8}, ps[] = {9.0, 9.4, 9.1};
  for (int i = 0; i < 3; ++i) {
    JobComparison round = base;
    round.ring.seconds_to_target = ring[i];
    round.ps.seconds_to_target = ps[i];
    round.ps.steps_to_target = 175;
    rounds.push_back(round);
  }
  const Verdict verdict = DecideWinner(MergeRounds(rounds));
  EXPECT_FALSE(verdict.same_steps.has_value());
  EXPECT_EQ(verdict.basis, "seconds_to_target");
  EXPECT_EQ(verdict.outcome, Outcome::kWinner);
  EXPECT_EQ(verdict.winner, SyncMode::kPs);
  EXPECT_NEAR(verdict.ratio, 12.0 / 9.1, 1e-9);
  EXPECT_THAT(verdict.line, HasSubstr("time to 75% ring 12.0 s (step 150) vs ps 9.10 s"));
}

TEST(VerdictTest, TheDecidingTermIsNamedFromMeasuredFigures) {
  // The ring wins on sync: its busiest link carries less than the shard.
  Verdict verdict = DecideWinner(testing::SyntheticJob());
  EXPECT_EQ(verdict.term, "bandwidth");
  EXPECT_THAT(verdict.reason,
              HasSubstr("ring: its busiest link carried 10.7 MiB/step against the shard's 14.2 "
                        "MiB/step"));
  EXPECT_THAT(verdict.line, HasSubstr("deciding: ring: its busiest link carried"));

  // The ps wins on sync though its busiest node carries more: a rate, not bandwidth.
  JobComparison job = testing::SyntheticJob();
  job.ring.busiest_node_bytes_per_step = 20e6;
  verdict = DecideWinner(job);
  EXPECT_EQ(verdict.term, "rate");

  // Compute decides where the phases differ most there.
  job = testing::SyntheticJob();
  job.ps.phases = {0.300, 0.121, 0.010};
  verdict = DecideWinner(job);
  EXPECT_EQ(verdict.term, "compute");
  EXPECT_THAT(verdict.reason, HasSubstr("ps's compute phase took 300 ms/step against ring's"));

  // The step verdict is on medians, so are its terms: where worker-0's trace has phase medians,
  // a mean that moved the other way (a few slow syncs of the ring) does not name compute.
  job = testing::SyntheticJob();
  job.ring.phases = {0.080, 0.300, 0.010};  // mean sync above the ps's 0.262
  job.ps.phases = {0.082, 0.262, 0.001};
  job.ring.sync_p50 = 0.118;
  job.ps.sync_p50 = 0.255;
  job.ring.compute_p50 = 0.080;
  job.ps.compute_p50 = 0.082;
  verdict = DecideWinner(job);
  EXPECT_EQ(verdict.term, "bandwidth") << verdict.reason;

  // No phase moved as much as the step did: none is named as the cause.
  job.ring.sync_p50 = 0.250;
  verdict = DecideWinner(job);
  EXPECT_EQ(verdict.term, "spread") << verdict.reason;
  EXPECT_THAT(verdict.reason, HasSubstr("no phase explains it"));

  // A tie names no term.
  job = testing::SyntheticJob();
  job.ps.phases = {0.300, 0.121, 0.010};
  job.ps.step_seconds = job.ring.step_seconds;
  EXPECT_TRUE(DecideWinner(job).term.empty());
}

TEST(VerdictTest, AFailedModeOrNoStepTimesIsUndecided) {
  JobComparison job = testing::SyntheticJob();
  job.ring.step_seconds.clear();
  EXPECT_EQ(DecideWinner(job).outcome, Outcome::kUndecided);
  job = testing::SyntheticJob();
  job.ps.completed = false;
  job.ps.failure = "ps-1 exited";
  EXPECT_THAT(DecideWinner(job).line, HasSubstr("No winner: the ps run failed (ps-1 exited)"));
}

TEST(RepeatsTest, TheSummaryHoldsEveryRunAndTheMediansOfTheirFigures) {
  const JobComparison job =
      Repeated(testing::SyntheticJob(), {0.20, 0.24, 0.22}, {0.30, 0.36, 0.33});
  EXPECT_EQ(job.config.repeats, 3);
  ASSERT_EQ(job.ring.repeats.size(), 3u);
  EXPECT_DOUBLE_EQ(job.ring.step_p50, 0.22);
  EXPECT_DOUBLE_EQ(job.ps.samples_per_second, 64 / 0.33);
  const Spread spread = FigureSpread(job.ps, [](const ModeReport& m) { return m.step_p50; });
  EXPECT_DOUBLE_EQ(spread.min, 0.30);
  EXPECT_DOUBLE_EQ(spread.max, 0.36);
  // The median run's own series stay (its steps are 0.22's).
  EXPECT_DOUBLE_EQ(Median(job.ring.step_seconds), Median(job.ring.repeats[2].step_seconds));
}

TEST(RepeatsTest, EventsKeepTheirRepeatAndATargetReachedBySomeRunsHasNoMedian) {
  JobComparison base = testing::FashionMnistJob();
  std::vector<JobComparison> rounds = {base, base};
  rounds[1].ps.seconds_to_target.reset();
  rounds[1].ps.steps_to_target.reset();
  rounds[1].ring.events = {"worker-3 exited"};
  const JobComparison job = MergeRounds(rounds);
  EXPECT_FALSE(job.ps.seconds_to_target.has_value());
  EXPECT_THAT(job.ps.events.back(), HasSubstr("reached the target in 1 of 2 repeats"));
  ASSERT_EQ(job.ring.events.size(), 1u);
  EXPECT_EQ(job.ring.events[0], "repeat 2: worker-3 exited");
  EXPECT_DOUBLE_EQ(*job.ring.seconds_to_target, 12.0);
}

}  // namespace
}  // namespace ringside::cli
