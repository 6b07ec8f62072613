// The probe's fit of latency α and inverse bandwidth β (common/link_fit.h) on synthetic timings.
#include "common/link_fit.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace ringside {
namespace {

// 1 KiB to 4 MiB, doubling, as the probe sends.
std::vector<MessageTiming> Timings(double alpha, double beta) {
  std::vector<MessageTiming> timings;
  for (uint64_t bytes = 1024; bytes <= (uint64_t{4} << 20); bytes *= 2) {
    timings.push_back({bytes, alpha + beta * static_cast<double>(bytes)});
  }
  return timings;
}

TEST(LinkFitTest, RecoversKnownAlphaAndBeta) {
  const struct {
    double alpha, bytes_per_second;
  } cases[] = {{50e-6, 1.25e9}, {2e-3, 12.5e6}, {0, 1.25e6}, {1e-4, 3e10}};
  for (const auto& c : cases) {
    absl::StatusOr<LinkFit> fit = FitLatencyBandwidth(Timings(c.alpha, 1 / c.bytes_per_second));
    ASSERT_TRUE(fit.ok()) << fit.status();
    EXPECT_NEAR(fit->latency_seconds, c.alpha, 1e-9 + c.alpha * 1e-9);
    EXPECT_NEAR(fit->bytes_per_second(), c.bytes_per_second, c.bytes_per_second * 1e-9);
  }
}

TEST(LinkFitTest, SmallMessagesSetTheLatencyUnderRelativeNoise) {
  // ±2% alternating on every timing, α = 100 µs, 1 GB/s: unweighted, the 4 MiB echoes' noise
  // alone (±84 µs) would swamp α; weighted by 1/t², α comes out within a few per cent.
  std::vector<MessageTiming> timings = Timings(100e-6, 1e-9);
  for (size_t i = 0; i < timings.size(); ++i) timings[i].seconds *= i % 2 == 0 ? 1.02 : 0.98;
  absl::StatusOr<LinkFit> fit = FitLatencyBandwidth(timings);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->latency_seconds, 100e-6, 5e-6);
  EXPECT_NEAR(fit->seconds_per_byte, 1e-9, 0.03e-9);
}

TEST(LinkFitTest, NegativeInterceptIsZeroLatency) {
  absl::StatusOr<LinkFit> fit = FitLatencyBandwidth(Timings(-1e-6, 1e-9));
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->latency_seconds, 0);
}

TEST(LinkFitTest, RefusesTimingsThatGiveNoRate) {
  const MessageTiming one_size[] = {{1024, 1e-3}, {1024, 2e-3}};
  const MessageTiming flat[] = {{1024, 1e-3}, {4096, 1e-3}};
  const MessageTiming faster[] = {{1024, 2e-3}, {4096, 1e-3}};
  const MessageTiming zero[] = {{1024, 0}, {4096, 1e-3}};
  const MessageTiming nan[] = {{1024, std::nan("")}, {4096, 1e-3}};
  for (absl::Span<const MessageTiming> timings :
       {absl::Span<const MessageTiming>(one_size), absl::Span<const MessageTiming>(flat),
        absl::Span<const MessageTiming>(faster), absl::Span<const MessageTiming>(zero),
        absl::Span<const MessageTiming>(nan), absl::Span<const MessageTiming>()}) {
    absl::StatusOr<LinkFit> fit = FitLatencyBandwidth(timings);
    ASSERT_FALSE(fit.ok());
    EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument) << fit.status();
  }
}

}  // namespace
}  // namespace ringside
