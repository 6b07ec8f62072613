// `ringside plan --calibrate`: the runs read from compare's JSON, and the fit that lets runs at
// N = 2 and 4 predict N = 8 (cli/plan_calibration.h).
#include "cli/plan_calibration.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside::cli {
namespace {

PlanInput SmallJobOn100Mbit() {
  PlanInput input;
  input.model = "784,128,10";
  input.job = {.parameters = 101'770, .element_bytes = 4, .global_batch = 64};
  input.costs = {.link_bytes_per_second = 12.5e6,
                 .link_latency_seconds = 100e-6,
                 .compute_seconds_per_sample = 40e-6,
                 .sync_cpu_seconds_per_byte = 1e-9,
                 .cores_per_process = 1};
  return input;
}

// What a cluster the model misses measures: compute 1.1×, the sync's bandwidth part 1.3× and
// its rounds 20× what the probe's α says.
MeasuredRun TruthAt(const PlanInput& input, PlanMode mode, int workers, int shards) {
  PlanCluster cluster = input.shape;
  cluster.workers = workers;
  cluster.shards = shards;
  const StepPrediction p = *PredictStep(mode, input.job, cluster, input.costs);
  const double sync = 1.3 * (p.sync_seconds - p.latency_seconds) + 20 * p.latency_seconds;
  return {mode, workers, shards, input.job.global_batch, 4, 1.1 * p.compute_seconds + sync, sync};
}

TEST(PlanCalibrationTest, RunsAtTwoAndFourWorkersPredictEight) {
  const PlanInput input = SmallJobOn100Mbit();
  std::vector<MeasuredRun> runs;
  for (int n : {2, 4}) {
    runs.push_back(TruthAt(input, PlanMode::kRing, n, 1));
    runs.push_back(TruthAt(input, PlanMode::kPs, n, 2));
  }
  const absl::StatusOr<PlanCalibration> fit = FitPlanCalibration(input, runs);
  ASSERT_TRUE(fit.ok()) << fit.status();
  PlanCluster eight;
  eight.workers = 8;
  eight.shards = 2;
  for (PlanMode mode : {PlanMode::kRing, PlanMode::kPs}) {
    const MeasuredRun truth = TruthAt(input, mode, 8, 2);
    const StepPrediction calibrated = *PredictStep(mode, input.job, eight, input.costs, *fit);
    EXPECT_NEAR(calibrated.step_seconds, truth.step_seconds, 1e-9 * truth.step_seconds)
        << PlanModeName(mode);
    EXPECT_NEAR(calibrated.sync_seconds, truth.sync_seconds, 1e-9 * truth.sync_seconds);
    // Uncalibrated, the model misses by the scales.
    EXPECT_LT(PredictStep(mode, input.job, eight, input.costs)->step_seconds,
              0.95 * truth.step_seconds);
  }
  EXPECT_EQ(fit->of(PlanMode::kColocatedPs).runs, 0);  // not run: the model as it is
  EXPECT_EQ(fit->of(PlanMode::kPsBackup).bandwidth_scale, fit->of(PlanMode::kPs).bandwidth_scale);
  EXPECT_NE(CalibrationText(*fit).find("ring compute ×1.1, bandwidth ×1.3, latency ×20 (2 runs)"),
            std::string::npos)
      << CalibrationText(*fit);
}

TEST(PlanCalibrationTest, RunsWithoutASyncMedianCannotCalibrate) {
  MeasuredRun run = TruthAt(SmallJobOn100Mbit(), PlanMode::kRing, 2, 1);
  run.sync_seconds = -1;
  const absl::StatusOr<PlanCalibration> fit = FitPlanCalibration(SmallJobOn100Mbit(), {run});
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fit.status().message().find("no run with a measured step and sync"),
            absl::string_view::npos);
}

TEST(PlanCalibrationTest, ReadsEveryModesRunOfTheModelFromCompareJson) {
  auto dir = launch::TempDir::Create("ringside-calibrate-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->path() + "/compare.json";
  std::ofstream(path) << R"({"jobs": [
    {"config": {"model": "784,128,10", "ps_shards": 2, "batch_size": 128, "element_bytes": 2},
     "modes": {"ring": {"step_seconds": {"p50": 0.05}, "sync_seconds": {"p50": 0.02},
                        "final_world": 4},
               "ps": {"step_seconds": {"p50": 0.06}, "final_world": 3},
               "ps_colocated": {"step_seconds": {"p50": 0.07}, "sync_seconds": {"p50": 0.03},
                                "final_world": 4},
               "async": {"step_seconds": {"p50": 0.01}, "final_world": 4}}},
    {"config": {"model": "784,128,10", "batch_size": 1e300, "ps_shards": -4},
     "modes": {"ring": {"step_seconds": {"p50": 0.05}, "final_world": 1e12},
               "ps": {"step_seconds": {"p50": 0.05}, "sync_seconds": {"p50": 1e300},
                      "final_world": 2}}},
    {"config": {"model": "784,1024,1024,10"},
     "modes": {"ring": {"step_seconds": {"p50": 0.3}, "final_world": 2}}}]})";
  const absl::StatusOr<std::vector<MeasuredRun>> runs =
      ReadMeasuredRuns("--calibrate", path, "784,128,10");
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_EQ((*runs)[0].mode, PlanMode::kRing);
  EXPECT_EQ((*runs)[0].workers, 4);
  EXPECT_EQ((*runs)[0].batch_size, 128);
  EXPECT_EQ((*runs)[0].element_bytes, 2);
  EXPECT_EQ((*runs)[0].sync_seconds, 0.02);
  EXPECT_EQ((*runs)[1].shards, 2);
  EXPECT_EQ((*runs)[1].workers, 3);        // its final world
  EXPECT_EQ((*runs)[1].sync_seconds, -1);  // none in the file
  EXPECT_EQ((*runs)[2].mode, PlanMode::kColocatedPs);
  EXPECT_EQ((*runs)[2].shards, 4);
  // Figures out of range are not cast: a world of 10^12 is no run, a batch of 10^300 none given.
  EXPECT_EQ((*runs)[3].mode, PlanMode::kPs);
  EXPECT_EQ((*runs)[3].batch_size, 0);
  EXPECT_EQ((*runs)[3].shards, 1);
  EXPECT_EQ((*runs)[3].sync_seconds, -1);  // a sync of 10^300 s: none

  std::ofstream(dir->path() + "/probe.json") << R"({"version": 1})";
  const absl::StatusOr<std::vector<MeasuredRun>> probe =
      ReadMeasuredRuns("--calibrate", dir->path() + "/probe.json", "784,128,10");
  EXPECT_NE(probe.status().message().find("--calibrate=" + dir->path() +
                                          "/probe.json: not a ringside compare --json file"),
            absl::string_view::npos)
      << probe.status();
  EXPECT_FALSE(ReadMeasuredRuns("--calibrate", dir->path() + "/absent.json", "784,128,10").ok());
}

}  // namespace
}  // namespace ringside::cli
