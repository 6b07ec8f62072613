// The ring allreduce with 16-bit gradients on the wire (--wire_dtype; ring/allreduce.h), N ranks
// as N threads over the in-memory transport: exactly half of fp32's payload bytes on every link
// at odd sizes, every rank ends with the same bits, fp16 sums beyond 65504 survive the
// division by N, and a NaN share fails the collective on every rank instead of being summed.
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cost_model.h"
#include "common/metrics.h"
#include "common/wire_dtype.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "ring/allreduce.h"
#include "ring/memory_transport.h"
#include "tests/ring/ring_test_util.h"

namespace ringside::ring {
namespace {

using testing::RunRanks;

struct CountedRun {
  std::vector<std::vector<float>> buffers;
  std::vector<absl::Status> statuses;
  std::vector<double> bytes, expected_bytes, messages;  // each rank's link to its right
};

// One allreduce of `inputs` (one buffer per rank) with `options`, counting each rank's link.
CountedRun RunCounted(std::vector<std::vector<float>> inputs, const AllreduceOptions& options) {
  const int world = static_cast<int>(inputs.size());
  InMemoryRing ring(world);
  Metrics metrics(std::make_shared<prometheus::Registry>());
  const std::vector<LinkSendMetrics> links = testing::RingLinks(metrics, world);
  CountedRun run;
  run.buffers = std::move(inputs);
  run.statuses.assign(world, absl::OkStatus());
  RunRanks(world, [&](int rank) {
    RingAllreduce allreduce(ring.transport(rank), links[rank]);
    run.statuses[rank] = allreduce.Run(1, absl::MakeSpan(run.buffers[rank]), options);
  });
  for (const LinkSendMetrics& link : links) {
    run.bytes.push_back(link.bytes->Value());
    run.expected_bytes.push_back(link.expected_bytes->Value());
    run.messages.push_back(link.messages->Value());
  }
  return run;
}

std::vector<std::vector<float>> RandomShares(int world, uint64_t elements, float scale,
                                             uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<std::vector<float>> shares(world, std::vector<float>(elements));
  for (auto& share : shares) {
    for (float& value : share) value = normal(random);
  }
  return shares;
}

std::vector<double> ExactSum(const std::vector<std::vector<float>>& shares) {
  std::vector<double> sum(shares[0].size(), 0.0);
  for (const auto& share : shares) {
    for (size_t i = 0; i < share.size(); ++i) sum[i] += share[i];
  }
  return sum;
}

// A bucketed step (--bucket_bytes, worker/overlapped_sync.h): one allreduce per bucket of odd
// sizes, last bucket first. Every link carries exactly the cost model's bytes for the buckets
// (RingElementsSentByRank over them), in every dtype, and every rank ends with the same bits.
TEST(BucketedAllreduceTest, EachBucketsAllreduceSendsTheCostModelsBytes) {
  constexpr int kWorld = 3;
  const std::vector<uint64_t> buckets = {48, 418, 518};  // the parts, last first
  uint64_t elements = 0;
  for (uint64_t b : buckets) elements += b;
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    InMemoryRing ring(kWorld);
    Metrics metrics(std::make_shared<prometheus::Registry>());
    const std::vector<LinkSendMetrics> links = testing::RingLinks(metrics, kWorld);
    std::vector<std::vector<float>> buffers = RandomShares(kWorld, elements, 1.0f, 5);
    std::vector<absl::Status> statuses(kWorld);
    AllreduceOptions options;
    options.segment_bytes = 10;
    options.wire_dtype = dtype;
    RunRanks(kWorld, [&](int rank) {
      RingAllreduce allreduce(ring.transport(rank), links[rank]);
      uint64_t end = elements;
      for (size_t b = 0; b < buckets.size() && statuses[rank].ok(); ++b) {
        const absl::Span<float> part =
            absl::MakeSpan(buffers[rank]).subspan(end - buckets[b], buckets[b]);
        statuses[rank] = allreduce.Run(1 + b, part, options);
        end -= buckets[b];
      }
    });
    for (int r = 0; r < kWorld; ++r) {
      ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
      const double model = static_cast<double>(RingElementsSentByRank(buckets, kWorld, r) *
                                               WireBytesPerElement(dtype));
      EXPECT_EQ(links[r].bytes->Value(), model) << "rank " << r;
      EXPECT_EQ(links[r].expected_bytes->Value(), model) << "rank " << r;
      EXPECT_EQ(buffers[r], buffers[0]) << "rank " << r << " differs from rank 0";
    }
  }
}

struct WireCase {
  WireDtype dtype;
  int world;
  uint64_t elements;
};

class WireDtypeAllreduceTest : public ::testing::TestWithParam<WireCase> {};

TEST_P(WireDtypeAllreduceTest, HalfOfFp32sBytesOnEveryLinkAndTheSameBitsOnEveryRank) {
  const auto [dtype, world, elements] = GetParam();
  const auto shares = RandomShares(world, elements, 1.0f, 27);
  AllreduceOptions fp32;
  fp32.segment_bytes = 10;  // odd elements per segment in 16 bits: 5
  AllreduceOptions wire = fp32;
  wire.wire_dtype = dtype;
  const CountedRun full = RunCounted(shares, fp32);
  const CountedRun half = RunCounted(shares, wire);
  const std::vector<double> exact = ExactSum(shares);
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(half.statuses[r].ok()) << "rank " << r << ": " << half.statuses[r];
    const double model = static_cast<double>(RingBytesSentByRank(elements, world, r, dtype));
    EXPECT_EQ(half.bytes[r], model) << "rank " << r;
    EXPECT_EQ(half.expected_bytes[r], model) << "rank " << r;
    EXPECT_EQ(2 * half.bytes[r], full.bytes[r]) << "rank " << r;
    EXPECT_EQ(half.buffers[r], half.buffers[0]) << "rank " << r << " differs from rank 0";
  }
  // Each hop rounds once: N-1 roundings of partial sums plus the owner's, each within half an
  // ulp of the wire type (2^-11 fp16, 2^-8 bf16) of values at most the sum of magnitudes.
  const double ulp = dtype == WireDtype::kFp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  for (uint64_t i = 0; i < elements; ++i) {
    double magnitude = 0;
    for (const auto& share : shares) magnitude += std::abs(share[i]);
    ASSERT_NEAR(half.buffers[0][i], exact[i], world * ulp * magnitude + 1e-6) << "index " << i;
  }
}

std::vector<WireCase> WireCases() {
  std::vector<WireCase> cases;
  for (WireDtype dtype : {WireDtype::kFp16, WireDtype::kBf16}) {
    for (int world : {2, 3, 5}) {
      for (uint64_t elements : {uint64_t{1}, uint64_t{7}, uint64_t{1003}}) {
        cases.push_back({dtype, world, elements});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DtypesWorldsAndOddSizes, WireDtypeAllreduceTest,
                         ::testing::ValuesIn(WireCases()), [](const auto& info) {
                           return std::string(WireDtypeName(info.param.dtype)) + "_N" +
                                  std::to_string(info.param.world) + "_K" +
                                  std::to_string(info.param.elements);
                         });

// A chunk travels in at least four segments however large --segment_bytes is (so a hop's
// pipeline fills in a quarter of a chunk's time on any link), in segments of at most
// --segment_bytes when those are smaller, and whole when a quarter would be under 64 KiB (small
// collectives are latency-bound): messages per link are 2(N-1) steps' worth.
TEST(RingSegmentsTest, AChunkTravelsInAtLeastFourSegmentsUnlessSmallAndNoneLargerThanAsked) {
  constexpr int kWorld = 2;
  struct Case {
    uint64_t elements, segment_bytes, segments_per_chunk;
  };
  for (const Case& c : {Case{160000, uint64_t{1} << 20, 4},      // chunks of 320 KB: quarters
                        Case{160000, 10000 * sizeof(float), 8},  // as asked
                        Case{4000, uint64_t{1} << 20, 1}}) {     // 8 KB chunks: whole
    SCOPED_TRACE(absl::StrCat(c.elements, " elements, segments of ", c.segment_bytes, " B"));
    const auto shares = RandomShares(kWorld, c.elements, 1.0f, 5);
    AllreduceOptions options;
    options.segment_bytes = c.segment_bytes;
    const CountedRun run = RunCounted(shares, options);
    for (int r = 0; r < kWorld; ++r) {
      ASSERT_TRUE(run.statuses[r].ok()) << run.statuses[r];
      EXPECT_EQ(run.messages[r], 2 * (kWorld - 1) * c.segments_per_chunk) << "rank " << r;
      EXPECT_EQ(run.buffers[r], run.buffers[0]) << "rank " << r;
    }
  }
}

// Shares of 60000 (fp16's largest finite value is 65504) from 4 ranks sum to 240000: without
// the division by N the first hop's partial sum would be infinite.
TEST(WireDtypeAllreduceTest, Fp16SumsBeyond65504AreGuardedByDividingByN) {
  constexpr int kWorld = 4;
  constexpr uint64_t kElements = 37;
  ASSERT_TRUE(std::isinf(Fp16ToFloat(FloatToFp16(2 * 60000.0f))));  // what the guard prevents
  std::vector<std::vector<float>> shares(kWorld, std::vector<float>(kElements));
  for (int r = 0; r < kWorld; ++r) {
    for (uint64_t i = 0; i < kElements; ++i) shares[r][i] = (i % 2 ? -1.0f : 1.0f) * (60000 + i);
  }
  AllreduceOptions options;
  options.wire_dtype = WireDtype::kFp16;
  options.segment_bytes = 6;
  const CountedRun run = RunCounted(shares, options);
  const std::vector<double> exact = ExactSum(shares);
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(run.statuses[r].ok()) << "rank " << r << ": " << run.statuses[r];
    for (uint64_t i = 0; i < kElements; ++i) {
      ASSERT_TRUE(std::isfinite(run.buffers[r][i])) << "rank " << r << " index " << i;
      ASSERT_NEAR(run.buffers[r][i], exact[i], 2e-3 * std::abs(exact[i])) << "index " << i;
    }
  }
}

TEST(WireDtypeAllreduceTest, ANanShareFailsTheCollectiveOnEveryRankAndSaysWhoseItWas) {
  for (WireDtype dtype : {WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    constexpr int kWorld = 3;
    auto shares = RandomShares(kWorld, 101, 1.0f, 5);
    shares[1][42] = std::numeric_limits<float>::quiet_NaN();
    AllreduceOptions options;
    options.wire_dtype = dtype;
    options.segment_bytes = 32;
    const CountedRun run = RunCounted(shares, options);
    for (int r = 0; r < kWorld; ++r) {
      EXPECT_EQ(run.statuses[r].code(), absl::StatusCode::kInvalidArgument) << run.statuses[r];
      EXPECT_THAT(std::string(run.statuses[r].message()),
                  ::testing::HasSubstr(r == 1 ? "own share had 1)" : "own share had 0)"));
      EXPECT_THAT(std::string(run.statuses[r].message()), ::testing::HasSubstr("NaN"));
    }
  }
}

TEST(WireDtypeAllreduceTest, RanksThatDisagreeOnTheWireDtypeFailInsteadOfMisreading) {
  constexpr int kWorld = 3;
  const auto shares = RandomShares(kWorld, 30, 1.0f, 9);
  InMemoryRing ring(kWorld);
  std::vector<std::vector<float>> buffers = shares;
  std::vector<absl::Status> statuses(kWorld);
  RunRanks(kWorld, [&](int rank) {
    AllreduceOptions options;
    // Rank 1 fails at once; the in-memory ring's others end at their deadline (or sooner).
    options.timeout = absl::Seconds(2);
    options.wire_dtype = rank == 0 ? WireDtype::kFp16 : WireDtype::kFp32;
    RingAllreduce allreduce(ring.transport(rank), LinkSendMetrics{});
    statuses[rank] = allreduce.Run(1, absl::MakeSpan(buffers[rank]), options);
  });
  // Rank 1 receives rank 0's float16 segments while expecting float32.
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument) << statuses[1];
  EXPECT_THAT(std::string(statuses[1].message()), ::testing::HasSubstr("--wire_dtype"));
  for (int r = 0; r < kWorld; ++r) EXPECT_FALSE(statuses[r].ok()) << "rank " << r;
}

}  // namespace
}  // namespace ringside::ring
