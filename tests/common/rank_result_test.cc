#include "common/rank_result.h"

#include <cmath>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

TEST(FillPatternTest, SumsAreExactSmallIntegers) {
  for (int world : {1, 2, 3, 4, 8, 64}) {
    for (int64_t i : {0, 1, 6, 7, 1000003}) {
      double sum = 0;
      for (int rank = 0; rank < world; ++rank) sum += FillValue(rank, i);
      EXPECT_EQ(sum, ExpectedSum(world, i)) << world << " " << i;
    }
  }
}

// Simulates an in-place allreduce of `world` ranks by adding the other ranks' fills.
void FakeAllreduce(int rank, int world, std::vector<float>& data) {
  for (int other = 0; other < world; ++other) {
    if (other == rank) continue;
    for (size_t i = 0; i < data.size(); ++i) data[i] += FillValue(other, static_cast<int64_t>(i));
  }
}

TEST(RunTimedIterationsTest, CountsAndChecks) {
  std::vector<float> data(1000);
  int calls = 0;
  const RankResult result = RunTimedIterations(1, 3, 2, 5, absl::MakeSpan(data), [&] {
    ++calls;
    FakeAllreduce(1, 3, data);
  });
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(result.rank, 1);
  EXPECT_EQ(result.world, 3);
  EXPECT_EQ(result.elements, 1000);
  EXPECT_EQ(result.iters, 5);
  EXPECT_TRUE(result.check_ok);
  EXPECT_EQ(result.max_abs_error, 0);
  EXPECT_GE(result.seconds_total, result.seconds_per_op);
}

TEST(RunTimedIterationsTest, StopsAsSoonAsAskedTo) {
  std::vector<float> data(10);
  int calls = 0;
  RunTimedIterations(
      0, 1, 0, 1000, absl::MakeSpan(data), [&] { ++calls; }, [&] { return calls == 3; });
  EXPECT_EQ(calls, 3);
}

TEST(RunTimedIterationsTest, DetectsAWrongSumInAnyIteration) {
  std::vector<float> data(100);
  int calls = 0;
  const RankResult result = RunTimedIterations(0, 2, 1, 3, absl::MakeSpan(data), [&] {
    FakeAllreduce(0, 2, data);
    if (++calls == 2) data[42] += 0.5f;  // one bad element in one iteration
  });
  EXPECT_FALSE(result.check_ok);
  EXPECT_EQ(result.max_abs_error, 0.5);
  data.assign(4, NAN);
  EXPECT_TRUE(std::isinf(MaxAbsErrorOfSum(2, data)));
}

// The loop a PS rank runs: its own check, asked after every step (warm-up included) with the
// step's index, untimed; the data refilled before every step.
TEST(RunTimedStepsTest, ChecksEveryStepWithItsIndex) {
  std::vector<float> data(16);
  std::vector<int> steps, checks;
  const RankResult result = RunTimedSteps(
      2, 4, 1, 3, absl::MakeSpan(data),
      [&](int it) {
        EXPECT_EQ(data[0], FillValue(2, 0)) << "refilled before step " << it;
        steps.push_back(it);
        data[0] = -1;
      },
      [&](int it) {
        checks.push_back(it);
        return it == 2 ? 0.25 : 0.0;
      });
  EXPECT_EQ(steps, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(checks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(result.rank, 2);
  EXPECT_EQ(result.world, 4);
  EXPECT_EQ(result.elements, 16);
  EXPECT_EQ(result.iters, 3);
  EXPECT_FALSE(result.check_ok);
  EXPECT_EQ(result.max_abs_error, 0.25);
}

TEST(MedianTest, OddEvenEmpty) {
  EXPECT_EQ(Median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(Median({4.0, 1.0, 2.0, 3.0}), 2.5);
  EXPECT_EQ(Median({}), 0.0);
}

TEST(RankResultFileTest, RoundTripsAndRejectsMalformed) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("rank-result-test-");
  ASSERT_TRUE(dir.ok());
  RankResult result;
  result.rank = 3;
  result.world = 4;
  result.elements = 1 << 20;
  result.iters = 10;
  result.seconds_per_op = 0.125;
  result.seconds_total = 1.5;
  result.check_ok = true;
  result.max_abs_error = 0;
  const std::string path = dir->File("r.json");
  ASSERT_TRUE(WriteRankResult(path, result).ok());
  absl::StatusOr<RankResult> read = ReadRankResult(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->rank, 3);
  EXPECT_EQ(read->world, 4);
  EXPECT_EQ(read->elements, 1 << 20);
  EXPECT_EQ(read->iters, 10);
  EXPECT_EQ(read->seconds_per_op, 0.125);
  EXPECT_EQ(read->seconds_total, 1.5);
  EXPECT_TRUE(read->check_ok);

  EXPECT_EQ(ReadRankResult(dir->File("missing.json")).status().code(), absl::StatusCode::kNotFound);
  const std::string bad = dir->File("bad.json");
  for (const char* text : {"not json", "[1]", R"({"rank":0,"world":2})",
                           R"({"rank":0,"world":2,"elements":1,"iters":1,"seconds_per_op":1,
                               "check_ok":"yes"})"}) {
    std::ofstream(bad, std::ios::trunc) << text;
    EXPECT_EQ(ReadRankResult(bad).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  // A worker may add fields of its own.
  std::ofstream(bad, std::ios::trunc)
      << R"({"rank":1,"world":2,"elements":8,"iters":2,"seconds_per_op":0.5,"check_ok":false,
            "extra":"ignored"})";
  ASSERT_TRUE(ReadRankResult(bad).ok());
  EXPECT_FALSE(ReadRankResult(bad)->check_ok);
}

}  // namespace
}  // namespace ringside
