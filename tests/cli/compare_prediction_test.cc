// compare's and lab's prediction of each run (cli/compare_prediction.h): the step model's step for
// the run's mode, variant and final world, and none for what the model does not describe.
#include "cli/compare_prediction.h"

#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

ClusterCosts Costs() {
  ClusterCosts costs;
  costs.link_bytes_per_second = 1e6;
  costs.compute_seconds_per_sample = 1e-4;
  return costs;
}

JobConfig Config() {
  JobConfig config;
  config.parameters = 1000;
  config.batch_size = 64;
  config.element_bytes = 4;
  return config;
}

ModeReport CompletedRun(SyncMode mode, int world) {
  ModeReport report;
  report.mode = mode;
  report.completed = true;
  report.final_world = world;
  return report;
}

TEST(ComparePredictionTest, RingAndPsGetTheModelsStep) {
  ModeReport ring = CompletedRun(SyncMode::kRing, 4);
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, ring);
  EXPECT_DOUBLE_EQ(ring.predicted_sync_seconds, 6000 / 1e6);  // 2(N-1)/N·K·4 bytes
  EXPECT_DOUBLE_EQ(ring.predicted_step_seconds, 16e-4 + 6e-3);
  ModeReport ps = CompletedRun(SyncMode::kPs, 4);
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, ps);
  EXPECT_DOUBLE_EQ(ps.predicted_sync_seconds, 8000 / 1e6);  // N·K/S·4 bytes into a shard
  ModeReport colocated = CompletedRun(SyncMode::kPs, 4);
  colocated.colocated = true;
  FillPrediction(Costs(), TrainingOptions{}, Config(), 4, colocated);
  EXPECT_DOUBLE_EQ(colocated.predicted_sync_seconds, 6000 / 1e6);
}

TEST(ComparePredictionTest, NoneForAsyncOrAFailedRun) {
  TrainingOptions async;
  async.staleness = kAsyncStaleness;
  ModeReport ps = CompletedRun(SyncMode::kPs, 4);
  FillPrediction(Costs(), async, Config(), 2, ps);
  EXPECT_EQ(ps.predicted_step_seconds, 0);
  ModeReport failed = CompletedRun(SyncMode::kRing, 4);
  failed.completed = false;
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, failed);
  EXPECT_EQ(failed.predicted_step_seconds, 0);
}

}  // namespace
}  // namespace ringside::cli
