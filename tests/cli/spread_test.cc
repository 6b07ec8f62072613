// The verdict's statistics on known samples: medians and spreads, and the bootstrap interval's
// coverage of a known ratio on synthetic data at about its nominal rate.
#include "cli/report/spread.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

TEST(SpreadTest, MedianOfOddAndEvenCountsAndNone) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
  const Spread spread = SpreadOf({0.3, 0.1, 0.2, 0.5});
  EXPECT_EQ(spread.median, 0.25);
  EXPECT_EQ(spread.min, 0.1);
  EXPECT_EQ(spread.max, 0.5);
  EXPECT_EQ(spread.count, 4);
  EXPECT_EQ(SpreadOf({}).count, 0);
}

TEST(SpreadTest, EmptyOrNonPositiveSamplesGiveNoInterval) {
  EXPECT_FALSE(BootstrapRatioOfMedians({}, {1.0}).valid);
  EXPECT_FALSE(BootstrapRatioOfMedians({1.0}, {}).valid);
  EXPECT_FALSE(BootstrapRatioOfMedians({1.0, 2.0}, {0.0, 0.0, 0.0}).valid);
  EXPECT_FALSE(BootstrapRatioOfMedians({-1.0}, {1.0}).valid);
  EXPECT_FALSE(BootstrapRatioOfMedians({1.0}, {1.0}, {.confidence = 1.0}).valid);
  EXPECT_FALSE(BootstrapRatioOfMedians({1.0, 2.0}, {1.0}).Excludes(1.0));
}

TEST(SpreadTest, TheSameSamplesGiveTheSameIntervalAndTheSeedIsWhatChangesIt) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(1.0 + 0.013 * i);
    b.push_back(1.0 + 0.011 * ((i * 7) % 30));
  }
  const RatioInterval first = BootstrapRatioOfMedians(a, b);
  const RatioInterval second = BootstrapRatioOfMedians(a, b);
  EXPECT_EQ(first.low, second.low);
  EXPECT_EQ(first.high, second.high);
  EXPECT_DOUBLE_EQ(first.ratio, Median(a) / Median(b));
  EXPECT_LE(first.low, first.ratio);
  EXPECT_GE(first.high, first.ratio);
  const RatioInterval other = BootstrapRatioOfMedians(a, b, {.seed = 7});
  EXPECT_TRUE(other.low != first.low || other.high != first.high);
}

TEST(SpreadTest, AClearGapIsExcludedFromOneAndIdenticalSamplesAreNot) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> noise(0, 0.05);
  std::vector<double> fast, slow, same;
  for (int i = 0; i < 50; ++i) {
    fast.push_back(0.10 * noise(rng));
    slow.push_back(0.13 * noise(rng));
    same.push_back(0.10 * noise(rng));
  }
  const RatioInterval gap = BootstrapRatioOfMedians(slow, fast);
  EXPECT_TRUE(gap.Excludes(1.0));
  EXPECT_GT(gap.low, 1.15);
  EXPECT_LT(gap.high, 1.45);
  EXPECT_FALSE(BootstrapRatioOfMedians(fast, fast).Excludes(1.0));
  EXPECT_FALSE(BootstrapRatioOfMedians(same, fast).Excludes(1.0));
}

// Many seeded trials of two lognormal samples whose medians are known (0.13 and 0.10): the 95%
// interval must cover the true ratio 1.3 in about 95% of them. An interval that is too narrow
// (say the 80% one) covers far less and fails the lower bound; one far too wide covers nearly
// always and fails the upper bound. (The bootstrap of a median is a little conservative at odd
// sizes: about 97% here.) Every trial is seeded, so the test gives the same counts every run.
double Coverage(double confidence, int n) {
  constexpr int kTrials = 300;
  constexpr double kTrueRatio = 1.3;
  std::mt19937_64 rng(2026);
  std::lognormal_distribution<double> noise(0, 0.2);  // median 1: the sample's median is its scale
  int covered = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<double> a, b;
    for (int i = 0; i < n; ++i) a.push_back(0.13 * noise(rng));
    for (int i = 0; i < n; ++i) b.push_back(0.10 * noise(rng));
    const RatioInterval interval = BootstrapRatioOfMedians(
        a, b, {.confidence = confidence, .resamples = 500, .seed = static_cast<uint64_t>(trial)});
    if (interval.valid && interval.low <= kTrueRatio && kTrueRatio <= interval.high) ++covered;
  }
  return static_cast<double>(covered) / kTrials;
}

TEST(SpreadTest, TheIntervalCoversAKnownRatioAtAboutItsNominalRate) {
  const double coverage = Coverage(0.95, 31);
  EXPECT_GT(coverage, 0.91);
  EXPECT_LT(coverage, 0.99);
  // The check has teeth: an 80% interval covers at about 80%, so one passed off as 95% would fail
  // the band above.
  const double narrow = Coverage(0.80, 31);
  EXPECT_GT(narrow, 0.74);
  EXPECT_LT(narrow, 0.90);
}

}  // namespace
}  // namespace ringside::cli
