// The step model's correction from measured runs (common/step_calibration.h), on runs made from
// known corrections, and applied by PredictStep.
#include "common/step_calibration.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "common/step_model.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

// A run whose measurement is `compute_scale` × the predicted compute, `bandwidth_scale` × the
// sync's bandwidth part and `latency_scale` × its latency.
CalibrationRun MadeRun(double compute, double bandwidth, double latency, double compute_scale,
                       double bandwidth_scale, double latency_scale) {
  const double measured_sync = bandwidth_scale * bandwidth + latency_scale * latency;
  return {compute, bandwidth + latency, latency, compute_scale * compute + measured_sync,
          measured_sync};
}

TEST(StepCalibrationTest, NoRunIsTheIdentity) {
  const StepCalibration fit = FitStepCalibration({});
  EXPECT_EQ(fit.runs, 0);
  EXPECT_EQ(fit.compute_scale, 1);
  EXPECT_EQ(fit.bandwidth_scale, 1);
  EXPECT_EQ(fit.latency_scale, 1);
}

TEST(StepCalibrationTest, RecoversTheScalesRunsWereMadeWith) {
  // A ring at N = 2, 4, 8: the bandwidth part saturates, the rounds grow.
  const StepCalibration fit = FitStepCalibration({MadeRun(0.40, 0.0326, 0.0005, 1.2, 0.8, 20),
                                                  MadeRun(0.20, 0.0488, 0.0016, 1.2, 0.8, 20),
                                                  MadeRun(0.10, 0.0570, 0.0038, 1.2, 0.8, 20)});
  EXPECT_EQ(fit.runs, 3);
  EXPECT_NEAR(fit.compute_scale, 1.2, 1e-12);
  EXPECT_NEAR(fit.bandwidth_scale, 0.8, 1e-9);
  EXPECT_NEAR(fit.latency_scale, 20, 1e-7);
}

TEST(StepCalibrationTest, ANegativeScaleOrOneRunScalesTheBandwidthAlone) {
  // The PS's two rounds at every N (the lab's N = 2 and 4 at 100mbit): the sync grows faster
  // than its bandwidth part, so the two-part fit gives the latency a negative scale; it stays as
  // modelled and the bandwidth part takes the rest.
  const StepCalibration ps = FitStepCalibration(
      {{0.001, 0.06554, 0.00054, 0.0904, 0.0896}, {0.001, 0.13054, 0.00054, 0.1965, 0.1959}});
  EXPECT_EQ(ps.latency_scale, 1);
  EXPECT_NEAR(
      ps.bandwidth_scale,
      (0.065 * (0.0896 - 0.00054) + 0.130 * (0.1959 - 0.00054)) / (0.065 * 0.065 + 0.130 * 0.130),
      1e-9);
  const StepCalibration one = FitStepCalibration({MadeRun(0.1, 0.05, 0.001, 0.9, 1.3, 1)});
  EXPECT_NEAR(one.bandwidth_scale, 1.3, 1e-12);
  EXPECT_EQ(one.latency_scale, 1);
  EXPECT_NEAR(one.compute_scale, 0.9, 1e-12);
}

TEST(StepCalibrationTest, ASyncBelowItsModelledLatencyLeavesTheSyncAsModelled) {
  // Measured below the rounds' modelled cost alone: no positive bandwidth scale fits, and the
  // latency is not refitted as if the bandwidth part were not there.
  const StepCalibration fit =
      FitStepCalibration({{0.1, 0.11, 0.01, 0.105, 0.005}, {0.1, 0.21, 0.01, 0.102, 0.002}});
  EXPECT_EQ(fit.runs, 2);
  EXPECT_EQ(fit.bandwidth_scale, 1);
  EXPECT_EQ(fit.latency_scale, 1);
}

TEST(StepCalibrationTest, ASyncOfLatencyAloneScalesTheLatency) {
  const StepCalibration fit =
      FitStepCalibration({MadeRun(0.1, 0, 0.001, 1, 1, 3), MadeRun(0.2, 0, 0.002, 1, 1, 3)});
  EXPECT_EQ(fit.bandwidth_scale, 1);
  EXPECT_NEAR(fit.latency_scale, 3, 1e-12);
}

TEST(StepCalibrationTest, RunsWithFiguresOutOfRangeAreLeftOut) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const StepCalibration fit = FitStepCalibration({
      MadeRun(0.1, 0.05, 0, 2, 1, 1),
      {0.1, 0.05, 0, nan, 0.05},     // no step
      {0.1, 0.05, 0, 0.04, 0.05},    // a sync longer than its step
      {0, 0.05, 0, 0.2, 0.05},       // no compute predicted
      {0.1, 0.01, 0.02, 0.2, 0.05},  // a latency above its sync
  });
  EXPECT_EQ(fit.runs, 1);
  EXPECT_NEAR(fit.compute_scale, 2, 1e-12);
  EXPECT_EQ(FitStepCalibration({{0.1, 0.05, 0, nan, 0.05}}).runs, 0);
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
      .runs = 2, .compute_scale = 1.5, .bandwidth_scale = 2, .latency_scale = 10};
  const StepPrediction raw = *PredictStep(PlanMode::kRing, job, cluster, costs);
  const StepPrediction fitted = *PredictStep(PlanMode::kRing, job, cluster, costs, calibration);
  EXPECT_DOUBLE_EQ(fitted.compute_seconds, 1.5 * raw.compute_seconds);
  EXPECT_DOUBLE_EQ(fitted.wire_seconds, 2 * raw.wire_seconds);
  EXPECT_DOUBLE_EQ(fitted.cpu_seconds, 2 * raw.cpu_seconds);
  EXPECT_DOUBLE_EQ(fitted.latency_seconds, 10 * raw.latency_seconds);
  EXPECT_DOUBLE_EQ(fitted.sync_seconds,
                   10 * raw.latency_seconds + 2 * std::max(raw.wire_seconds, raw.cpu_seconds));
  EXPECT_DOUBLE_EQ(fitted.step_seconds, fitted.compute_seconds + fitted.sync_seconds);
  const StepPrediction ps = *PredictStep(PlanMode::kPs, job, cluster, costs, calibration);
  EXPECT_EQ(ps.step_seconds, PredictStep(PlanMode::kPs, job, cluster, costs)->step_seconds);
}

}  // namespace
}  // namespace ringside
