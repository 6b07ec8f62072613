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
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, /*host_cores=*/0, ring);
  EXPECT_DOUBLE_EQ(ring.predicted_sync_seconds, 6000 / 1e6);  // 2(N-1)/N·K·4 bytes
  EXPECT_DOUBLE_EQ(ring.predicted_step_seconds, 16e-4 + 6e-3);
  // The run's push window, 1600 bytes: segments of 400 (100 elements), whose pipeline's fill and
  // drain the PS pays on the shard's link, 2 × pushes × 400 bytes.
  JobConfig config = Config();
  config.ps_window_bytes = 1600;
  ModeReport ps = CompletedRun(SyncMode::kPs, 4);
  FillPrediction(Costs(), TrainingOptions{}, config, 2, /*host_cores=*/0, ps);
  EXPECT_DOUBLE_EQ(ps.predicted_sync_seconds, (8000 + 2 * 4 * 400) / 1e6);  // N·K/S·4 in
  ModeReport colocated = CompletedRun(SyncMode::kPs, 4);
  colocated.colocated = true;
  FillPrediction(Costs(), TrainingOptions{}, config, 4, /*host_cores=*/0, colocated);
  EXPECT_DOUBLE_EQ(colocated.predicted_sync_seconds, (6000 + 2 * 3 * 400) / 1e6);
  // No window given: the workers' default (2 MiB, segments of 512 KiB), longer than a shard's
  // range of 500 elements, which is pushed whole and then answered whole.
  ModeReport ps_default = CompletedRun(SyncMode::kPs, 4);
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, /*host_cores=*/0, ps_default);
  EXPECT_DOUBLE_EQ(ps_default.predicted_sync_seconds, (8000 + 4 * 2000) / 1e6);
}

TEST(ComparePredictionTest, EveryProcessOnTheRunsHost) {
  // 2 cores for 4 workers: the batch's 64 samples at 1e-4 s each share them (32e-4 s, over a
  // worker's 16 rows alone); with 1 ns of CPU a byte, 2(N−1)·K elements sent and as many
  // received, 4 bytes each, on 2 cores (24e-6 s), under the wire's 6e-3 s.
  ClusterCosts costs = Costs();
  costs.sync_cpu_seconds_per_byte = 1e-9;
  ModeReport ring = CompletedRun(SyncMode::kRing, 4);
  FillPrediction(costs, TrainingOptions{}, Config(), 2, /*host_cores=*/2, ring);
  EXPECT_DOUBLE_EQ(ring.predicted_step_seconds, 32e-4 + 6e-3);
  // At 1 µs a byte the host's CPU, 2 × 6000 × 4 × 1e-6 / 2 = 0.024 s, is the sync.
  costs.sync_cpu_seconds_per_byte = 1e-6;
  FillPrediction(costs, TrainingOptions{}, Config(), 2, /*host_cores=*/2, ring);
  EXPECT_DOUBLE_EQ(ring.predicted_sync_seconds, 0.024);
}

TEST(ComparePredictionTest, NoneForAsyncOrAFailedRun) {
  TrainingOptions async;
  async.staleness = kAsyncStaleness;
  ModeReport ps = CompletedRun(SyncMode::kPs, 4);
  FillPrediction(Costs(), async, Config(), 2, /*host_cores=*/0, ps);
  EXPECT_EQ(ps.predicted_step_seconds, 0);
  ModeReport failed = CompletedRun(SyncMode::kRing, 4);
  failed.completed = false;
  FillPrediction(Costs(), TrainingOptions{}, Config(), 2, /*host_cores=*/0, failed);
  EXPECT_EQ(failed.predicted_step_seconds, 0);
}

}  // namespace
}  // namespace ringside::cli
