// The step model's correction from measured runs (common/step_calibration.h), on runs made from
// known corrections, and applied by PredictStep.
#include "common/step_calibration.h"

#include <cmath>
#include <limits>
#include <vector>

#include "common/step_model.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

// A run whose measurement is `compute_scale` × the predicted compute and `sync_scale` × the
// predicted sync + `offset`.
CalibrationRun MadeRun(double compute, double sync, double compute_scale, double sync_scale,
                       double offset) {
  const double measured_sync = sync_scale * sync + offset;
  return {compute, sync, compute_scale * compute + measured_sync, measured_sync};
}

TEST(StepCalibrationTest, NoRunIsTheIdentity) {
  const StepCalibration fit = FitStepCalibration({});
  EXPECT_EQ(fit.runs, 0);
  EXPECT_EQ(fit.CalibratedCompute(0.3), 0.3);
  EXPECT_EQ(fit.CalibratedSync(0.2), 0.2);
}

TEST(StepCalibrationTest, RecoversTheScalesAndTheOffsetRunsWereMadeWith) {
  const std::vector<CalibrationRun> runs = {MadeRun(0.40, 0.10, 1.2, 1.5, 0.004),
                                            MadeRun(0.20, 0.15, 1.2, 1.5, 0.004),
                                            MadeRun(0.10, 0.175, 1.2, 1.5, 0.004)};
  const StepCalibration fit = FitStepCalibration(runs);
  EXPECT_EQ(fit.runs, 3);
  EXPECT_NEAR(fit.compute_scale, 1.2, 1e-12);
  EXPECT_NEAR(fit.sync_scale, 1.5, 1e-12);
  EXPECT_NEAR(fit.sync_offset_seconds, 0.004, 1e-12);
  EXPECT_NEAR(fit.CalibratedSync(0.2), 0.304, 1e-12);  // a sync none of the runs had
}

TEST(StepCalibrationTest, ANegativeOffsetOrOneRunFitsTheSyncThroughTheOrigin) {
  // Measured 2 × predicted − 10 ms: an affine fit would give a negative per-step cost.
  const StepCalibration steep =
      FitStepCalibration({MadeRun(0.1, 0.02, 1, 2, -0.01), MadeRun(0.1, 0.04, 1, 2, -0.01)});
  EXPECT_EQ(steep.sync_offset_seconds, 0);
  EXPECT_NEAR(steep.sync_scale, (0.02 * 0.03 + 0.04 * 0.07) / (0.02 * 0.02 + 0.04 * 0.04), 1e-12);
  const StepCalibration one = FitStepCalibration({MadeRun(0.1, 0.05, 0.9, 1.3, 0)});
  EXPECT_NEAR(one.sync_scale, 1.3, 1e-12);
  EXPECT_EQ(one.sync_offset_seconds, 0);
  EXPECT_NEAR(one.compute_scale, 0.9, 1e-12);
}

TEST(StepCalibrationTest, ASyncPredictedAsNothingIsAllOffset) {
  const StepCalibration fit =
      FitStepCalibration({MadeRun(0.1, 0, 1, 1, 0.002), MadeRun(0.2, 0, 1, 1, 0.004)});
  EXPECT_EQ(fit.sync_scale, 1);
  EXPECT_NEAR(fit.sync_offset_seconds, 0.003, 1e-12);
}

TEST(StepCalibrationTest, RunsWithFiguresOutOfRangeAreLeftOut) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const StepCalibration fit = FitStepCalibration({
      MadeRun(0.1, 0.05, 2, 1, 0),
      {0.1, 0.05, nan, 0.05},   // no step
      {0.1, 0.05, 0.04, 0.05},  // a sync longer than its step
      {0, 0.05, 0.2, 0.05},     // no compute predicted
      {0.1, -1, 0.2, 0.05},     // a negative sync predicted
  });
  EXPECT_EQ(fit.runs, 1);
  EXPECT_NEAR(fit.compute_scale, 2, 1e-12);
  EXPECT_EQ(FitStepCalibration({{0.1, 0.05, nan, 0.05}}).runs, 0);
}

TEST(StepCalibrationTest, PredictStepScalesTheComputeAndTheSyncTermsOfItsModeAlone) {
  const PlanJob job{.parameters = 100'000, .element_bytes = 4, .global_batch = 256};
  const PlanCluster cluster{.workers = 4, .shards = 2};
  const ClusterCosts costs{.link_bytes_per_second = 1.25e8,
                           .link_latency_seconds = 50e-6,
                           .compute_seconds_per_sample = 1e-4,
                           .sync_cpu_seconds_per_byte = 1e-9};
  PlanCalibration calibration;
  calibration.of(PlanMode::kRing) = {
      .runs = 2, .compute_scale = 1.5, .sync_scale = 2, .sync_offset_seconds = 0.001};
  const StepPrediction raw = *PredictStep(PlanMode::kRing, job, cluster, costs);
  const StepPrediction fitted = *PredictStep(PlanMode::kRing, job, cluster, costs, calibration);
  EXPECT_DOUBLE_EQ(fitted.compute_seconds, 1.5 * raw.compute_seconds);
  EXPECT_DOUBLE_EQ(fitted.sync_seconds, 2 * raw.sync_seconds + 0.001);
  EXPECT_DOUBLE_EQ(fitted.step_seconds, fitted.compute_seconds + fitted.sync_seconds);
  EXPECT_DOUBLE_EQ(fitted.wire_seconds, 2 * raw.wire_seconds);  // each term scaled
  EXPECT_EQ(fitted.overhead_seconds, 0.001);
  EXPECT_EQ(raw.overhead_seconds, 0);
  const StepPrediction ps = *PredictStep(PlanMode::kPs, job, cluster, costs, calibration);
  EXPECT_EQ(ps.step_seconds, PredictStep(PlanMode::kPs, job, cluster, costs)->step_seconds);
}

}  // namespace
}  // namespace ringside
