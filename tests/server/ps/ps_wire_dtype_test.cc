// 16-bit gradients on the parameter server's wire (--wire_dtype; server/ps/ps_client.h,
// shard_state.h): real shards over gRPC in this process. Every push and every reply carries
// exactly half of fp32's payload bytes at odd range and segment sizes, workers and shards apply
// the very same bits, fp16 sums beyond 65504 survive the division by N, a NaN gradient fails the
// step instead of reaching the model, and shares of one step in two dtypes are refused.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_service.h"
#include "tests/support/ps_link_checks.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 1001;  // ranges of 334, 334 and 333
constexpr int kShards = 3;
constexpr uint64_t kSegmentBytes = 42;  // 21 elements of 16 bits: ranges end mid-segment

class PsWireDtypeTest : public ::testing::Test {
 protected:
  // `sum_buffer_elements`: what each shard keeps of a step's sum (ShardConfig), 0 for the
  // default.
  void StartShards(int workers, OptimizerConfig optimizer, const std::vector<float>& initial,
                   uint64_t sum_buffer_elements = 0) {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
    for (int s = 0; s < kShards; ++s) {
      ShardConfig config{1, workers, s};
      if (sum_buffer_elements > 0) config.sum_buffer_elements = sum_buffer_elements;
      auto state = ShardState::Create(
          config,
          std::vector<float>(initial.begin() + ranges[s].begin, initial.begin() + ranges[s].end),
          optimizer);
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<ParameterShardService>(kSegmentBytes));
      services_.back()->Serve(ShardGeneration{Shard::Synchronous(*std::move(state)), {}});
      auto started = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(started.ok()) << started.status();
      addresses_.push_back("127.0.0.1:" + std::to_string(started->port));
      servers_.push_back(*std::move(started));
    }
  }

  // `workers` workers as threads, each pushing gradients[step][w] with `dtype`, then applying
  // `optimizer` to the sum; their parameters, statuses and metrics.
  struct Workers {
    std::vector<std::vector<float>> params;
    std::vector<absl::Status> statuses;
    std::vector<std::unique_ptr<Metrics>> metrics;
    std::vector<std::vector<float>> last_sum;
  };
  // `window_bytes`: the workers' push window, 0 for the default; `timeout`: their step's
  // deadline (60 s: far beyond any test, reaching it is a failure, unless a test says otherwise).
  Workers RunWorkers(WireDtype dtype, OptimizerConfig optimizer, const std::vector<float>& initial,
                     const std::vector<std::vector<std::vector<float>>>& gradients,
                     uint64_t window_bytes = 0, absl::Duration timeout = absl::Seconds(60)) {
    const int workers = static_cast<int>(gradients[0].size());
    Workers out;
    out.params.assign(workers, initial);
    out.statuses.assign(workers, absl::OkStatus());
    out.last_sum.resize(workers);
    for (int w = 0; w < workers; ++w) {
      out.metrics.push_back(std::make_unique<Metrics>(std::make_shared<prometheus::Registry>()));
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        PsClientOptions options;
        options.shards = addresses_;
        options.rank = w;
        options.workers = workers;
        options.wire_dtype = dtype;
        options.segment_bytes = kSegmentBytes;
        options.timeout = timeout;
        if (window_bytes > 0) options.window_bytes = window_bytes;
        Optimizer mine = Optimizer::Create(optimizer, kParameters).value();
        auto client = PsClient::Create(options, kParameters, out.metrics[w].get());
        if (!client.ok()) {
          out.statuses[w] = client.status();
          return;
        }
        for (size_t step = 0; step < gradients.size() && out.statuses[w].ok(); ++step) {
          std::vector<float> gradient = gradients[step][w];
          out.statuses[w] = (*client)->Sum(static_cast<int64_t>(step), absl::MakeSpan(gradient));
          if (out.statuses[w].ok()) {
            out.statuses[w] = mine.Step(absl::MakeSpan(out.params[w]), gradient);
            out.last_sum[w] = gradient;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return out;
  }

  std::vector<std::unique_ptr<ParameterShardService>> services_;  // outlive the servers
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
};

std::vector<std::vector<std::vector<float>>> RandomGradients(int steps, int workers, float scale) {
  std::mt19937 random(27);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<std::vector<std::vector<float>>> gradients(steps);
  for (auto& step : gradients) {
    for (int w = 0; w < workers; ++w) {
      step.emplace_back(kParameters);
      for (float& value : step.back()) value = normal(random);
    }
  }
  return gradients;
}

class PsWireDtypeBytesTest : public PsWireDtypeTest,
                             public ::testing::WithParamInterface<WireDtype> {};

TEST_P(PsWireDtypeBytesTest, HalfOfFp32sBytesBothWaysAndWorkersAndShardsApplyTheSameBits) {
  const WireDtype dtype = GetParam();
  constexpr int kWorkers = 3;
  constexpr int kSteps = 4;
  OptimizerConfig adam{OptimizerKind::kAdam, 0.01f};
  const std::vector<float> initial(kParameters, 0.5f);
  const auto gradients = RandomGradients(kSteps, kWorkers, 1.0f);
  StartShards(kWorkers, adam, initial);
  const Workers run = RunWorkers(dtype, adam, initial, gradients);

  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(run.statuses[w].ok()) << WorkerName(w) << ": " << run.statuses[w];
    EXPECT_EQ(run.params[w], run.params[0]) << WorkerName(w);
    for (int s = 0; s < kShards; ++s) {
      const double bytes =
          static_cast<double>(PsBytesPerShardLink(kParameters, kShards, s, dtype) * kSteps);
      EXPECT_EQ(bytes, ranges[s].size() * 2.0 * kSteps);  // exactly half of float32's
      testing::ExpectPsLinkBytes(*run.metrics[w], w, s, bytes);
    }
  }
  testing::ExpectShardsHold(services_, ranges, kSteps, run.params[0]);
  // Two roundings per value (the push, the reply), whatever N is.
  const double ulp = dtype == WireDtype::kFp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  for (uint64_t i = 0; i < kParameters; ++i) {
    double exact = 0, magnitude = 0;
    for (const auto& share : gradients.back()) {
      exact += share[i];
      magnitude += std::abs(share[i]);
    }
    ASSERT_NEAR(run.last_sum[0][i], exact, 2 * ulp * magnitude + 1e-6) << "index " << i;
  }
}

// Shards that keep 50 elements of each step's sum (of ranges of 334) answer every worker with the
// bits of shards that keep it whole: each reply reads the sum's ring of slots across its wraps,
// and the applier sums into a slot again only once every reply has taken it. The workers' window
// (80 bytes: 40 elements, pushed in segments of 10) keeps them within the 50.
TEST_P(PsWireDtypeBytesTest, ASumKeptInPartAnswersTheBitsOfAWholeOne) {
  const WireDtype dtype = GetParam();
  constexpr int kWorkers = 3;
  constexpr int kSteps = 3;
  constexpr uint64_t kWindowBytes = 80;
  OptimizerConfig adam{OptimizerKind::kAdam, 0.01f};
  const std::vector<float> initial(kParameters, 0.5f);
  const auto gradients = RandomGradients(kSteps, kWorkers, 1.0f);
  StartShards(kWorkers, adam, initial);
  const Workers whole = RunWorkers(dtype, adam, initial, gradients, kWindowBytes);
  servers_.clear();
  services_.clear();
  addresses_.clear();
  StartShards(kWorkers, adam, initial, /*sum_buffer_elements=*/50);
  const Workers part = RunWorkers(dtype, adam, initial, gradients, kWindowBytes);

  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(whole.statuses[w].ok()) << WorkerName(w) << ": " << whole.statuses[w];
    ASSERT_TRUE(part.statuses[w].ok()) << WorkerName(w) << ": " << part.statuses[w];
    EXPECT_EQ(
        std::memcmp(part.params[w].data(), whole.params[w].data(), kParameters * sizeof(float)), 0)
        << WorkerName(w);
  }
  for (int s = 0; s < kShards; ++s) {
    const ShardState::Applied applied = services_[s]->current()->shard->steps()->applied().value();
    EXPECT_EQ(std::memcmp(applied.values->data(), whole.params[0].data() + ranges[s].begin,
                          ranges[s].size() * sizeof(float)),
              0)
        << PsShardName(s);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PsWireDtypeBytesTest,
                         ::testing::Values(WireDtype::kFp16, WireDtype::kBf16),
                         [](const auto& info) { return std::string(WireDtypeName(info.param)); });

// Four shares of about 60000 sum to about 240000, past fp16's 65504: the shard's reply would be
// infinite without the division by N.
TEST_F(PsWireDtypeTest, Fp16SumsBeyond65504AreGuardedByDividingByN) {
  constexpr int kWorkers = 4;
  ASSERT_TRUE(std::isinf(Fp16ToFloat(FloatToFp16(240000.0f))));  // what the guard prevents
  std::vector<std::vector<std::vector<float>>> gradients(1);
  for (int w = 0; w < kWorkers; ++w) {
    gradients[0].emplace_back(kParameters);
    for (uint64_t i = 0; i < kParameters; ++i) {
      gradients[0][w][i] = (i % 2 ? -1.0f : 1.0f) * (60000.0f + static_cast<float>(i % 100));
    }
  }
  const OptimizerConfig sgd{OptimizerKind::kSgd, 1e-6f};
  StartShards(kWorkers, sgd, std::vector<float>(kParameters, 0.0f));
  const Workers run =
      RunWorkers(WireDtype::kFp16, sgd, std::vector<float>(kParameters, 0.0f), gradients);
  for (int w = 0; w < kWorkers; ++w) ASSERT_TRUE(run.statuses[w].ok()) << run.statuses[w];
  for (uint64_t i = 0; i < kParameters; ++i) {
    const double exact = 4.0 * gradients[0][0][i];
    ASSERT_TRUE(std::isfinite(run.last_sum[0][i])) << "index " << i;
    ASSERT_NEAR(run.last_sum[0][i], exact, 2e-3 * std::abs(exact)) << "index " << i;
  }
}

// A NaN share is refused by the shard itself (issue 51): its worker's step fails at once naming
// it, the other's waits for a share that never comes until its deadline (in a job, what makes
// the members report the generation failed and regroup), and nobody applies anything.
TEST_F(PsWireDtypeTest, ANanGradientFailsTheStepOnEveryWorkerAndNothingIsApplied) {
  for (WireDtype dtype : {WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    servers_.clear();  // first: the services outlive their servers
    services_.clear();
    addresses_.clear();
    constexpr int kWorkers = 2;
    auto gradients = RandomGradients(1, kWorkers, 1.0f);
    gradients[0][1][500] = std::numeric_limits<float>::quiet_NaN();
    const OptimizerConfig sgd{OptimizerKind::kSgd, 0.1f};
    const std::vector<float> initial(kParameters, 1.0f);
    StartShards(kWorkers, sgd, initial);
    const Workers run = RunWorkers(dtype, sgd, initial, gradients, 0, absl::Seconds(3));
    EXPECT_EQ(run.statuses[1].code(), absl::StatusCode::kInvalidArgument) << run.statuses[1];
    EXPECT_THAT(std::string(run.statuses[1].message()),
                ::testing::HasSubstr("worker-1's push of step 0"));
    EXPECT_THAT(std::string(run.statuses[1].message()), ::testing::HasSubstr("NaN or infinite"));
    EXPECT_FALSE(run.statuses[0].ok()) << "worker 0's step cannot complete without worker 1's";
    for (int w = 0; w < kWorkers; ++w) {
      EXPECT_EQ(run.params[w], initial) << WorkerName(w) << " applied a NaN sum";
    }
  }
}

TEST(ShardStateWireDtypeTest, SharesOfOneStepInTwoDtypesAreRefused) {
  auto state = ShardState::Create(ShardConfig{1, 2, 0}, std::vector<float>(10, 0.0f),
                                  OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE((*state)->BeginPush(1, 0, 0, 10, WireDtype::kFp16).ok());
  const absl::Status other = (*state)->BeginPush(1, 1, 0, 10, WireDtype::kBf16);
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument) << other;
  EXPECT_THAT(std::string(other.message()), ::testing::HasSubstr("--wire_dtype"));
  // A ragged 16-bit segment (3 bytes) is refused as such.
  const absl::Status ragged = (*state)->AddSegment(0, 0, 0, std::string(3, '\0'));
  EXPECT_EQ(ragged.code(), absl::StatusCode::kInvalidArgument) << ragged;
  EXPECT_TRUE((*state)->BeginPush(1, 1, 0, 10, WireDtype::kFp16).ok());
}

}  // namespace
}  // namespace ringside::server
