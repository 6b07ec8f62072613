#include "worker/batching.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gtest/gtest.h"
#include "worker/device.h"

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

// Byte features become exactly byte / 255.0f, the floats Fashion-MNIST was once stored as; a set
// holding some rows finds each of them by its row number.
TEST(GatherRowsTest, ConvertsBytesAndFindsStoredRows) {
  Dataset data;
  data.features = 2;
  data.classes = 3;
  data.pixels = {0, 1, 128, 255};
  data.stored_rows = std::vector<int64_t>{1, 4};
  data.y = {0, 1, 2, 0, 2};
  ASSERT_TRUE(data.Holds({4, 1}));
  ASSERT_FALSE(data.Holds({0}));
  ASSERT_FALSE(data.Holds({5}));
  OwnedBatch batch;
  GatherRows(data, std::vector<int64_t>{4, 1, 4}, batch);
  const float v128 = 128 / 255.0f, v255 = 255 / 255.0f, v1 = 1 / 255.0f;
  EXPECT_EQ(batch.features, (std::vector<float>{v128, v255, 0.0f, v1, v128, v255}));
  EXPECT_EQ(batch.labels, (std::vector<int32_t>{2, 1, 2}));
}

Dataset ByteCopy(const Dataset& floats) {
  Dataset bytes = floats;
  bytes.x.clear();
  for (float v : floats.x) bytes.pixels.push_back(static_cast<uint8_t>(v));
  return bytes;
}

// EvaluateDataset gathers a piece at a time and sums as EvaluateInChunks does: the same figures
// bit for bit, on byte features too.
TEST(EvaluateDatasetTest, GivesEvaluateInChunksFiguresExactly) {
  const ModelSpec spec = *ModelSpec::Parse("6,12,4", "tanh");
  Dataset floats = MakeSyntheticDataset(700, 6, 4, 5);
  for (float& v : floats.x) v = std::round(std::clamp(v * 40 + 128, 0.0f, 255.0f));
  const Dataset bytes = ByteCopy(floats);
  for (float& v : floats.x) v /= 255.0f;
  const std::vector<float> params = InitialParameters(spec, 2);
  auto computer = MakeGradientComputer("cpu", spec);
  ASSERT_TRUE(computer.ok());
  for (int64_t chunk : {1, 256, 699, 5000}) {
    SCOPED_TRACE(chunk);
    const Evaluation want = *EvaluateInChunks(**computer, params, floats.AllRows(), chunk);
    for (const Dataset* data : {static_cast<const Dataset*>(&floats), &bytes}) {
      absl::StatusOr<Evaluation> got = EvaluateDataset(**computer, params, *data, chunk);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->rows, want.rows);
      EXPECT_EQ(got->correct, want.correct);
      EXPECT_EQ(got->mean_loss, want.mean_loss);
      EXPECT_EQ(got->accuracy, want.accuracy);
    }
  }
  Dataset some = bytes;
  some.pixels.resize(6);
  some.stored_rows = std::vector<int64_t>{3};
  EXPECT_EQ(EvaluateDataset(**computer, params, some).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ringside::worker
