#include "worker/batching.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

TEST(BatchScheduleTest, EachEpochIsAPermutation) {
  for (int64_t rows : {1, 2, 5, 150, 1000, 4097}) {
    auto schedule = BatchSchedule::Create(rows, 7, 3);
    ASSERT_TRUE(schedule.ok());
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> seen;
      for (int64_t p = epoch * rows; p < (epoch + 1) * rows; ++p) {
        seen.push_back(schedule->RowAt(p));
      }
      std::sort(seen.begin(), seen.end());
      for (int64_t i = 0; i < rows; ++i) ASSERT_EQ(seen[i], i) << rows << " epoch " << epoch;
    }
  }
}

TEST(BatchScheduleTest, DeterministicSeededAndShuffledPerEpoch) {
  auto a = BatchSchedule::Create(150, 32, 1);
  auto b = BatchSchedule::Create(150, 32, 1);
  auto c = BatchSchedule::Create(150, 32, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->GlobalBatchRows(3), b->GlobalBatchRows(3));
  EXPECT_NE(a->GlobalBatchRows(3), c->GlobalBatchRows(3));
  EXPECT_EQ(a->GlobalBatchRows(0).size(), 32u);
  std::vector<int64_t> epoch0, epoch1;
  for (int64_t p = 0; p < 150; ++p) epoch0.push_back(a->RowAt(p));
  for (int64_t p = 150; p < 300; ++p) epoch1.push_back(a->RowAt(p));
  EXPECT_NE(epoch0, epoch1);
  std::vector<int64_t> identity(150);
  for (int64_t i = 0; i < 150; ++i) identity[i] = i;
  EXPECT_NE(epoch0, identity);
}

TEST(BatchScheduleTest, WorkersSplitTheSameGlobalBatchWhateverN) {
  auto schedule = BatchSchedule::Create(150, 23, 9);
  ASSERT_TRUE(schedule.ok());
  for (int64_t step : {0, 1, 6, 7, 100}) {
    const std::vector<int64_t> global = schedule->GlobalBatchRows(step);
    for (int world = 1; world <= 30; ++world) {
      std::vector<int64_t> joined;
      for (int rank = 0; rank < world; ++rank) {
        const auto part = schedule->WorkerBatchRows(step, rank, world);
        EXPECT_EQ(part.size(), WorkerSlice(23, rank, world).size());
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, global) << "step " << step << " world " << world;
    }
  }
}

TEST(BatchScheduleTest, RejectsBadArguments) {
  EXPECT_EQ(BatchSchedule::Create(0, 32, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchSchedule::Create(150, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchSchedule::Create(150, -3, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(BatchSchedule::Create(150, 1000, 1).ok());  // batches may span epochs
}

TEST(GatherRowsTest, CopiesFeaturesAndLabels) {
  Dataset data;
  data.features = 2;
  data.classes = 2;
  data.x = {0, 1, 10, 11, 20, 21};
  data.y = {0, 1, 0};
  OwnedBatch batch;
  GatherRows(data, std::vector<int64_t>{2, 0}, batch);
  EXPECT_EQ(batch.features, (std::vector<float>{20, 21, 0, 1}));
  EXPECT_EQ(batch.labels, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(batch.view().rows(), 2);
}

}  // namespace
}  // namespace ringside::worker
