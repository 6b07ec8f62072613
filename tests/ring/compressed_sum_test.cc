// A compressed ring step (ring/compressed_sum.h, --compression=randomk:F), four ranks as threads
// over the in-memory transport, at a size of three blocks (the last odd): every rank ends each
// step with the same bits, the sum lies only on the drawn coordinates and equals the workers'
// decoded shares summed, the warm-up steps are the plain allreduce, and every link's bytes are
// the cost model's for the compact vector (measured = expected, to the byte).
#include "ring/compressed_sum.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "common/cost_model.h"
#include "common/counter_rng.h"
#include "common/metrics.h"
#include "common/randomk_codec.h"
#include "common/topk_codec.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "ring/allreduce.h"
#include "ring/memory_transport.h"
#include "tests/ring/ring_test_util.h"

namespace ringside::ring {
namespace {

constexpr int kWorld = 4;
constexpr uint64_t kElements = 2 * kCompressionBlockElements + 18929;
constexpr int64_t kWarmup = 2;
constexpr int64_t kSteps = 5;

std::vector<float> Share(int rank, int64_t step) {
  std::vector<float> share(kElements);
  for (uint64_t i = 0; i < kElements; ++i) {
    share[i] = static_cast<float>(
        CounterNormal(1000 * static_cast<uint64_t>(step) + rank, RngStream::kParameters, i));
  }
  return share;
}

TEST(CodecRingSumTest, RanksAgreeOnTheDrawnSumAndLinksCarryTheCompactBytes) {
  const Compression randomk{CompressionKind::kRandomK, 0.01f};
  const uint64_t compact = CompactElements(randomk, kElements);
  EXPECT_EQ(compact, 2 * TopKCount(kCompressionBlockElements, 0.01f) + TopKCount(18929, 0.01f));
  InMemoryRing ring(kWorld);
  Metrics metrics(std::make_shared<prometheus::Registry>());
  const std::vector<LinkSendMetrics> links = testing::RingLinks(metrics, kWorld);
  AllreduceOptions options;
  options.segment_bytes = 4096;  // many segments per chunk
  std::vector<std::vector<std::vector<float>>> sums(kSteps,
                                                    std::vector<std::vector<float>>(kWorld));
  std::vector<absl::Status> statuses(kWorld);
  testing::RunRanks(kWorld, [&](int rank) {
    RingAllreduce allreduce(ring.transport(rank), links[rank]);
    CodecRingSum compressed(randomk, kWarmup, /*seed=*/3, kElements);
    for (int64_t step = 0; step < kSteps && statuses[rank].ok(); ++step) {
      std::vector<float> gradient = Share(rank, step);
      statuses[rank] =
          compressed.Sum(step, absl::MakeSpan(gradient), [&](int, absl::Span<float> buffer) {
            return allreduce.Run(static_cast<uint64_t>(step) + 1, buffer, options);
          });
      sums[step][rank] = std::move(gradient);
    }
  });
  for (int r = 0; r < kWorld; ++r) ASSERT_TRUE(statuses[r].ok()) << r << ": " << statuses[r];
  std::vector<std::vector<std::vector<float>>> shares(kSteps);
  for (int64_t step = 0; step < kSteps; ++step) {
    for (int r = 0; r < kWorld; ++r) shares[step].push_back(Share(r, step));
  }
  for (int64_t step = 0; step < kSteps; ++step) {
    SCOPED_TRACE(step);
    for (int r = 1; r < kWorld; ++r) EXPECT_EQ(sums[step][r], sums[step][0]) << "rank " << r;
    if (step < kWarmup) {  // the plain allreduce: every element is a sum
      for (uint64_t i = 0; i < kElements; i += 997) {
        float exact = 0;
        for (int r = 0; r < kWorld; ++r) exact += shares[step][r][i];
        EXPECT_NEAR(sums[step][0][i], exact, 1e-4) << i;
      }
      continue;
    }
    // Compressed: only the drawn coordinates of each block carry a value.
    std::vector<bool> drawn(kElements, false);
    for (uint64_t at = 0; at < kElements; at += kCompressionBlockElements) {
      const uint64_t n = std::min(kCompressionBlockElements, kElements - at);
      for (const uint32_t i : RandomKCoordinates({3, step, at}, n, TopKCount(n, 0.01f))) {
        drawn[at + i] = true;
      }
    }
    size_t nonzero = 0;
    for (uint64_t i = 0; i < kElements; ++i) {
      if (!drawn[i]) {
        EXPECT_EQ(sums[step][0][i], 0.0f) << i;
      }
      nonzero += sums[step][0][i] != 0.0f ? 1 : 0;
    }
    EXPECT_EQ(nonzero, compact);  // normal values are never exactly zero
  }
  // The first compressed step: each rank's residual was zero, so the sum is the ranks' shares at
  // the drawn coordinates, summed (the ring's order: within rounding).
  for (uint64_t i = 0; i < kElements; ++i) {
    if (sums[kWarmup][0][i] == 0.0f) continue;
    float exact = 0;
    for (int r = 0; r < kWorld; ++r) exact += shares[kWarmup][r][i];
    ASSERT_NEAR(sums[kWarmup][0][i], exact, 1e-4) << i;
  }
  // Bytes: the warm-up steps the whole gradient, the others the compact vector.
  for (int r = 0; r < kWorld; ++r) {
    const double expected = static_cast<double>(
        kWarmup * RingBytesSentByRank(kElements, kWorld, r, WireDtype::kFp32) +
        (kSteps - kWarmup) * RingBytesSentByRank(compact, kWorld, r, WireDtype::kFp32));
    EXPECT_EQ(links[r].bytes->Value(), expected) << "rank " << r;
    EXPECT_EQ(links[r].expected_bytes->Value(), expected) << "rank " << r;
  }
}

TEST(CodecRingSumTest, AKindThatDoesNotSumInARingFailsTheStep) {
  CodecRingSum compressed({CompressionKind::kTopK, 0.1f}, 0, 1, 100);
  std::vector<float> gradient(100, 1.0f);
  bool ran = false;
  const absl::Status status =
      compressed.Sum(0, absl::MakeSpan(gradient), [&](int, absl::Span<float>) {
        ran = true;
        return absl::OkStatus();
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace ringside::ring
