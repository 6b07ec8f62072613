// Gloo ranks as threads of one process (TCP on loopback, FileStore in a temporary directory).
#include "bench/gloo_rank.h"

#include <ostream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside::bench {
namespace {

using ::testing::HasSubstr;

}  // namespace

// Readable parameter values in test output.
void PrintTo(GlooAlgorithm algorithm, std::ostream* os) { *os << GlooAlgorithmName(algorithm); }

namespace {

std::vector<absl::StatusOr<RankResult>> RunRanks(const GlooRankOptions& base) {
  std::vector<absl::StatusOr<RankResult>> results(base.world, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < base.world; ++rank) {
    threads.emplace_back([&, rank] {
      GlooRankOptions options = base;
      options.rank = rank;
      results[rank] = RunGlooRank(options);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

class GlooRankTest : public ::testing::TestWithParam<GlooAlgorithm> {
 protected:
  void SetUp() override {
    if (!HaveGloo()) GTEST_SKIP() << "built without Gloo";
  }
};

TEST_P(GlooRankTest, ThreeRanksReduceExactly) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("gloo-rank-test-");
  ASSERT_TRUE(dir.ok());
  GlooRankOptions options;
  options.world = 3;
  options.store_dir = dir->path();
  options.algorithm = GetParam();
  options.elements = 10007;  // not a multiple of the world: uneven chunks
  options.iters = 3;
  options.warmup = 1;
  options.timeout = absl::Seconds(30);
  const std::vector<absl::StatusOr<RankResult>> results = RunRanks(options);
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results[rank].ok()) << results[rank].status();
    EXPECT_EQ(results[rank]->rank, rank);
    EXPECT_EQ(results[rank]->world, 3);
    EXPECT_EQ(results[rank]->elements, 10007);
    EXPECT_TRUE(results[rank]->check_ok) << results[rank]->max_abs_error;
    EXPECT_GT(results[rank]->seconds_per_op, 0);
  }
}

TEST_P(GlooRankTest, MissingPeerIsAnErrorNotAHang) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("gloo-rank-test-");
  ASSERT_TRUE(dir.ok());
  GlooRankOptions options;
  options.rank = 0;
  options.world = 2;  // rank 1 never comes
  options.store_dir = dir->path();
  options.algorithm = GetParam();
  options.elements = 16;
  options.timeout = absl::Seconds(1);
  absl::StatusOr<RankResult> result = RunGlooRank(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("rank 0/2"));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, GlooRankTest,
                         ::testing::Values(GlooAlgorithm::kAllreduceRing,
                                           GlooAlgorithm::kRingChunked),
                         [](const auto& info) {
                           return info.param == GlooAlgorithm::kRingChunked ? "RingChunked"
                                                                            : "AllreduceRing";
                         });

TEST(GlooRankOptionsTest, ValidatesAndParses) {
  GlooRankOptions options;
  options.world = 2;
  options.store_dir = "/tmp/x";
  options.elements = 4;
  EXPECT_TRUE(ValidateGlooRankOptions(options).ok());
  options.rank = 2;
  EXPECT_FALSE(ValidateGlooRankOptions(options).ok());
  options.rank = 0;
  options.elements = 0;
  EXPECT_FALSE(ValidateGlooRankOptions(options).ok());
  EXPECT_EQ(*ParseGlooAlgorithm("ring_chunked"), GlooAlgorithm::kRingChunked);
  EXPECT_EQ(*ParseGlooAlgorithm("ring"), GlooAlgorithm::kAllreduceRing);
  EXPECT_FALSE(ParseGlooAlgorithm("bcube").ok());
}

}  // namespace
}  // namespace ringside::bench
