// A run's step figures from its first worker's trace: samples/s, p50 and the phases come from
// the same steps, and the loss over time carries where the first step began.
#include "cli/report/step_figures.h"

#include "cli/report/format_units.h"
#include "cli/report/report_charts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;

constexpr double kClusterStart = 1000;  // Unix seconds

// A step that ended at `end` (seconds after the cluster started) and took compute + sync +
// update seconds.
StepTraceLine Step(int64_t step, double end, double compute, double sync, double update) {
  StepTraceLine line;
  line.step = step;
  line.loss = 2.0 / (1 + step);
  line.compute_seconds = compute;
  line.sync_seconds = sync;
  line.update_seconds = update;
  line.seconds = compute + sync + update;
  line.unix_seconds = kClusterStart + end;
  return line;
}

// Start-up takes 4 s; then four steps of 0.2, 0.3, 0.25 and 0.25 s.
StepTrace WorkerZeroTrace() {
  StepTrace trace;
  trace.lines = {Step(0, 4.2, 0.10, 0.09, 0.01), Step(1, 4.5, 0.10, 0.19, 0.01),
                 Step(2, 4.75, 0.10, 0.14, 0.01), Step(3, 5.0, 0.10, 0.14, 0.01)};
  return trace;
}

TEST(StepFiguresTest, SamplesPerSecondP50AndPhasesDescribeTheSameSteps) {
  ModeReport report;
  FillStepFigures(WorkerZeroTrace(), "worker-0", 64, kClusterStart, report);
  const double mean_step = (0.2 + 0.3 + 0.25 + 0.25) / 4;
  EXPECT_DOUBLE_EQ(report.samples_per_second, 64 / mean_step);
  EXPECT_DOUBLE_EQ(report.step_p50, 0.25);
  EXPECT_DOUBLE_EQ(report.phases.compute, 0.10);
  EXPECT_DOUBLE_EQ(report.phases.sync, (0.09 + 0.19 + 0.14 + 0.14) / 4);
  EXPECT_DOUBLE_EQ(report.phases.update, 0.01);
  // The phases add up to the step samples/s divides the batch by: one definition, not two.
  const double phase_total = report.phases.compute + report.phases.sync + report.phases.update;
  EXPECT_NEAR(phase_total, mean_step, 1e-12);
  EXPECT_NEAR(64 / phase_total, report.samples_per_second, 1e-9);
  EXPECT_DOUBLE_EQ(report.sync_share, report.phases.sync / phase_total);
  EXPECT_DOUBLE_EQ(report.sync_p50, 0.14);
  EXPECT_DOUBLE_EQ(report.compute_p50, 0.10);
  // Too short a run to leave steps out: every step is in the figures.
  EXPECT_EQ(report.warmup_steps, 0);
  EXPECT_EQ(report.step_seconds.size(), 4u);
}

// A slow start-up (the first steps connect and allocate) is reported apart, not in the steady
// figures: 5 warm-up steps of 1 s, then 20 of 0.2 s.
TEST(StepFiguresTest, TheFirstStepsAreReportedApartFromTheSteadyFigures) {
  StepTrace trace;
  double end = 4;
  for (int step = 0; step < 25; ++step) {
    const double seconds = step < kWarmupSteps ? 1.0 : 0.2;
    end += seconds;
    trace.lines.push_back(Step(step, end, seconds - 0.1, 0.09, 0.01));
  }
  ModeReport report;
  FillStepFigures(trace, "worker-0", 64, kClusterStart, report);
  EXPECT_EQ(report.warmup_steps, kWarmupSteps);
  EXPECT_NEAR(report.warmup_seconds, 5.0, 1e-9);
  ASSERT_EQ(report.step_seconds.size(), 20u);
  EXPECT_NEAR(report.step_p95, 0.2, 1e-9);
  EXPECT_NEAR(report.samples_per_second, 64 / 0.2, 1e-6);
  // The loss curve still starts at the first step.
  EXPECT_EQ(report.loss_over_time.front().step, 0);
}

TEST(StepFiguresTest, ThePhaseChartShowsTheStepSamplesPerSecondComesFrom) {
  JobComparison job = testing::SyntheticJob();
  FillStepFigures(WorkerZeroTrace(), "worker-0", 64, kClusterStart, job.ring);
  const std::string svg = PhaseChart(job, "phases");
  // The bar's total is batch ÷ samples/s: the same 250 ms step.
  EXPECT_THAT(svg, HasSubstr(HumanSeconds(64 / job.ring.samples_per_second) + ", sync"));
  EXPECT_THAT(svg, HasSubstr("worker-0"));
}

TEST(StepFiguresTest, LossOverTimeKeepsTheClusterClockAndMarksTheFirstStep) {
  ModeReport report;
  FillStepFigures(WorkerZeroTrace(), "worker-0", 64, kClusterStart, report);
  ASSERT_EQ(report.loss_over_time.size(), 4u);
  EXPECT_NEAR(report.loss_over_time[0].seconds, 4.2, 1e-9);  // JSON seconds: as before
  EXPECT_NEAR(report.first_step_start_seconds, 4.0, 1e-9);   // step 0: 4.2 s less 0.2 s
}

TEST(StepFiguresTest, UnreadableLinesAreAnEvent) {
  StepTrace trace = WorkerZeroTrace();
  trace.unreadable = 1;
  ModeReport report;
  FillStepFigures(trace, "worker-0", 64, kClusterStart, report);
  ASSERT_EQ(report.events.size(), 1u);
  EXPECT_THAT(report.events[0], HasSubstr("worker-0's step trace had 1 unreadable lines"));
}

TEST(StepFiguresTest, AnEmptyTraceFillsZeros) {
  ModeReport report;
  FillStepFigures(StepTrace{}, "worker-0", 64, kClusterStart, report);
  EXPECT_EQ(report.samples_per_second, 0);
  EXPECT_EQ(report.step_p50, 0);
  EXPECT_EQ(report.sync_share, 0);
  EXPECT_EQ(report.first_step_start_seconds, 0);
  EXPECT_TRUE(report.loss_over_time.empty());
}

}  // namespace
}  // namespace ringside::cli
