#include "cli/report/model_prediction.h"

#include "common/cost_model.h"
#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

constexpr int64_t kK = 1863690;  // 784,1024,1024,10

TEST(PredictBytesPerStepTest, RingSendsTwoNMinusOneOverNOfK) {
  const ModelBytes ring = PredictBytesPerStep(SyncMode::kRing, kK, 4, 2, 4);
  EXPECT_EQ(ring.per_worker, RingElementsSentByRank(kK, 4, 0) * 4.0);
  EXPECT_EQ(ring.per_worker, 11182140);
  // Chunks 465923, 465923, 465922, 465922: rank 1 skips two small ones and sends the most.
  EXPECT_EQ(ring.busiest_node, 11182144);
  EXPECT_EQ(ring.busiest_node_name, "worker-2");
}

TEST(PredictBytesPerStepTest, PsShardTakesNTimesItsRange) {
  const ModelBytes ps = PredictBytesPerStep(SyncMode::kPs, kK, 4, 2, 4);
  EXPECT_EQ(ps.per_worker, kK * 4.0);
  EXPECT_EQ(ps.busiest_node, 4 * 931845 * 4.0);
  EXPECT_EQ(ps.largest_shard_ingress, ps.busiest_node);
  EXPECT_EQ(ps.busiest_node_name, "ps-0");
}

TEST(PredictBytesPerStepTest, PsBusiestIsAWorkerWhenShardsOutnumberWorkers) {
  const ModelBytes ps = PredictBytesPerStep(SyncMode::kPs, 1000, 2, 4, 4);
  EXPECT_EQ(ps.largest_shard_ingress, 2 * 250 * 4.0);
  EXPECT_EQ(ps.busiest_node, 4000);  // a worker pulls all K back
  EXPECT_EQ(ps.busiest_node_name, "worker-0");
}

TEST(PredictBytesPerStepTest, NothingToSendForAnEmptyJob) {
  EXPECT_EQ(PredictBytesPerStep(SyncMode::kRing, 0, 4, 2, 4).per_worker, 0);
  EXPECT_EQ(PredictBytesPerStep(SyncMode::kPs, 100, 0, 2, 4).busiest_node, 0);
  EXPECT_EQ(PredictBytesPerStep(SyncMode::kRing, 100, 1, 2, 4).per_worker, 0);
}

// The heavy compare job (K = 1,863,690, Adam, 2 shards): 4 K floats + 64 MiB for a worker
// (92.4 MiB), 3 of the largest range's for a shard.
TEST(PredictMemoryBoundTest, StatePlusSixtyFourMebibytes) {
  const MemoryBound adam = PredictMemoryBound(1'863'690, 2, OptimizerKind::kAdam);
  EXPECT_EQ(adam.worker_bytes, 4 * 1'863'690 * 4 + (int64_t{64} << 20));
  EXPECT_EQ(adam.shard_bytes, 3 * 931'845 * 4 + (int64_t{64} << 20));
  const MemoryBound odd = PredictMemoryBound(7, 2, OptimizerKind::kMomentum);  // ranges 4 and 3
  EXPECT_EQ(odd.worker_bytes, 3 * 7 * 4 + kMemoryAllowanceBytes);
  EXPECT_EQ(odd.shard_bytes, 2 * 4 * 4 + kMemoryAllowanceBytes);
  const MemoryBound sgd = PredictMemoryBound(100, 0, OptimizerKind::kSgd);
  EXPECT_EQ(sgd.worker_bytes, 2 * 100 * 4 + kMemoryAllowanceBytes);
  EXPECT_EQ(sgd.shard_bytes, 0);
}

TEST(WorkerCountsForCurveTest, IncreasingFromTwoToTheMaximum) {
  const std::vector<int> counts = WorkerCountsForCurve(1024);
  ASSERT_GE(counts.size(), 40u);
  EXPECT_EQ(counts.front(), 2);
  EXPECT_EQ(counts.back(), 1024);
  for (size_t i = 1; i < counts.size(); ++i) EXPECT_GT(counts[i], counts[i - 1]);
  for (int n = 2; n <= 10; ++n) EXPECT_EQ(counts[n - 2], n) << "every small N is drawn";
  EXPECT_EQ(WorkerCountsForCurve(5), (std::vector<int>{2, 3, 4, 5}));
}

}  // namespace
}  // namespace ringside::cli
