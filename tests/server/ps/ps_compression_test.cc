// Compressed gradients on the parameter server's Step stream (--compression: top-k and sign;
// server/ps/ps_client.h, shard_state.h): real shards over gRPC in this process, odd range and
// segment sizes. Every push and every reply carries exactly the codec's bytes (the cost model's,
// which the links' expected counters say too), after an uncompressed warm-up; workers and shards
// apply the very same bits; and those are the bits of the exchange done in memory by its plain
// classes (server/ps/compressed_exchange.h), error feedback on both sides included.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/compression.h"
#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/ps/compressed_exchange.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_service.h"
#include "tests/support/ps_link_checks.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 1001;  // ranges of 334, 334 and 333
constexpr int kShards = 3;
constexpr int kWorkers = 3;
constexpr int kSteps = 4;
constexpr int64_t kWarmup = 1;
// Pushes of 21 float32 elements (a quarter of the window): ranges end mid-segment.
constexpr uint64_t kWindowBytes = 84 * 4;
constexpr float kLearningRate = 0.1f;

using Gradients = std::vector<std::vector<std::vector<float>>>;  // [step][worker][element]

Gradients RandomGradients() {
  std::mt19937 random(31);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Gradients gradients(kSteps);
  for (auto& step : gradients) {
    for (int w = 0; w < kWorkers; ++w) {
      step.emplace_back(kParameters);
      for (float& value : step.back()) value = normal(random);
    }
  }
  return gradients;
}

class PsCompressionTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    compression_ = ParseCompression(GetParam()).value();
    codec_ = MakeGradientCodec(compression_);
  }

  // Shards keeping `sum_buffer_elements` of a step's sum (0: the default), and workers pushing
  // within `window_bytes`, in segments of a quarter of it.
  void StartShards(uint64_t window_bytes, uint64_t sum_buffer_elements = 0) {
    window_bytes_ = window_bytes;
    segment_elements_ = window_bytes / 4 / sizeof(float);
    const std::vector<float> initial(kParameters, 0.5f);
    for (int s = 0; s < kShards; ++s) {
      ShardConfig config{1, kWorkers, s};
      if (sum_buffer_elements > 0) config.sum_buffer_elements = sum_buffer_elements;
      auto state = ShardState::Create(
          config,
          std::vector<float>(initial.begin() + ranges_[s].begin, initial.begin() + ranges_[s].end),
          OptimizerConfig{OptimizerKind::kSgd, kLearningRate});
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<ParameterShardService>(uint64_t{1} << 20));
      services_.back()->Serve(ShardGeneration{Shard::Synchronous(*std::move(state)), {}});
      auto started = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(started.ok()) << started.status();
      addresses_.push_back("127.0.0.1:" + std::to_string(started->port));
      servers_.push_back(*std::move(started));
    }
  }

  struct Workers {
    std::vector<std::vector<float>> params;
    std::vector<absl::Status> statuses;
    std::vector<std::unique_ptr<Metrics>> metrics;
  };
  // Every worker as a thread: its share pushed each step, SGD applied to the sum it gets back.
  Workers RunWorkers(const Gradients& gradients) {
    Workers out;
    out.params.assign(kWorkers, std::vector<float>(kParameters, 0.5f));
    out.statuses.assign(kWorkers, absl::OkStatus());
    for (int w = 0; w < kWorkers; ++w) {
      out.metrics.push_back(std::make_unique<Metrics>(std::make_shared<prometheus::Registry>()));
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < kWorkers; ++w) {
      threads.emplace_back([&, w] {
        PsClientOptions options;
        options.shards = addresses_;
        options.rank = w;
        options.workers = kWorkers;
        options.window_bytes = window_bytes_;
        options.compression = compression_;
        options.compression_warmup = kWarmup;
        Optimizer mine =
            Optimizer::Create(OptimizerConfig{OptimizerKind::kSgd, kLearningRate}, kParameters)
                .value();
        auto client = PsClient::Create(options, kParameters, out.metrics[w].get());
        if (!client.ok()) {
          out.statuses[w] = client.status();
          return;
        }
        for (int step = 0; step < kSteps && out.statuses[w].ok(); ++step) {
          std::vector<float> gradient = gradients[step][w];
          out.statuses[w] = (*client)->Sum(step, absl::MakeSpan(gradient));
          if (out.statuses[w].ok())
            out.statuses[w] = mine.Step(absl::MakeSpan(out.params[w]), gradient);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return out;
  }

  // The same steps through the exchange's plain classes, segment by segment: the parameters.
  std::vector<float> InMemory(const Gradients& gradients) const {
    std::vector<float> params(kParameters, 0.5f);
    Optimizer optimizer =
        Optimizer::Create(OptimizerConfig{OptimizerKind::kSgd, kLearningRate}, kParameters).value();
    std::vector<std::vector<std::unique_ptr<WorkerCompression>>> workers(kShards);
    std::vector<std::unique_ptr<ShardCompression>> shards;
    for (int s = 0; s < kShards; ++s) {
      for (int w = 0; w < kWorkers; ++w) {
        workers[s].push_back(std::make_unique<WorkerCompression>(*codec_, 0, ranges_[s].size()));
      }
      shards.push_back(std::make_unique<ShardCompression>(*codec_, 0, 0, ranges_[s].size()));
    }
    for (int step = 0; step < kSteps; ++step) {
      std::vector<float> applied(kParameters, 0.0f);
      for (int s = 0; s < kShards; ++s) {
        const ElementRange range = ranges_[s];
        for (uint64_t at = 0; at < range.size(); at += segment_elements_) {
          const uint64_t n = std::min(segment_elements_, range.size() - at);
          const absl::Span<float> out = absl::MakeSpan(applied).subspan(range.begin + at, n);
          if (step < kWarmup) {  // float32, summed in rank order
            for (int w = 0; w < kWorkers; ++w) {
              for (uint64_t i = 0; i < n; ++i) {
                const float value = gradients[step][w][range.begin + at + i];
                out[i] = w == 0 ? value : out[i] + value;
              }
            }
            continue;
          }
          std::vector<std::string> pushes;
          for (int w = 0; w < kWorkers; ++w) {
            pushes.push_back(workers[s][w]->EncodePush(
                step, at, absl::MakeConstSpan(gradients[step][w]).subspan(range.begin + at, n)));
          }
          const std::vector<absl::string_view> views(pushes.begin(), pushes.end());
          std::vector<float> sum(n, 0.0f);
          EXPECT_TRUE(shards[s]->SumPushes(step, at, views, absl::MakeSpan(sum)).ok());
          shards[s]->EncodeReply(step, at, sum, out);
        }
      }
      EXPECT_TRUE(optimizer.Step(absl::MakeSpan(params), applied).ok());
    }
    return params;
  }

  // Every worker finished, holding bit for bit the exchange's parameters `expected`: the same
  // sums in the same order, the same residuals on both sides.
  static void ExpectTheExchangesParameters(const Workers& run, const std::vector<float>& expected) {
    for (int w = 0; w < kWorkers; ++w) {
      ASSERT_TRUE(run.statuses[w].ok()) << WorkerName(w) << ": " << run.statuses[w];
      EXPECT_EQ(std::memcmp(run.params[w].data(), expected.data(), kParameters * sizeof(float)), 0)
          << WorkerName(w);
    }
  }

  Compression compression_;
  std::unique_ptr<GradientCodec> codec_;
  uint64_t window_bytes_ = 0;
  uint64_t segment_elements_ = 0;
  const std::vector<ElementRange> ranges_ = EvenRanges(kParameters, kShards);
  std::vector<std::unique_ptr<ParameterShardService>> services_;  // outlive the servers
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
};

TEST_P(PsCompressionTest, EveryLinkCarriesTheCodecsBytesAndEveryoneAppliesTheExchangesBits) {
  StartShards(kWindowBytes);
  const Gradients gradients = RandomGradients();
  const Workers run = RunWorkers(gradients);
  ASSERT_NO_FATAL_FAILURE(ExpectTheExchangesParameters(run, InMemory(gradients)));

  for (int w = 0; w < kWorkers; ++w) {
    for (int s = 0; s < kShards; ++s) {
      const uint64_t size = ranges_[s].size();
      const double compressed = static_cast<double>(
          CompressedLinkBytes(*codec_, SegmentLengths(size, segment_elements_)));
      const double bytes =
          static_cast<double>(PsBytesPerShardLink(size, 1, 0, WireDtype::kFp32)) * kWarmup +
          compressed * (kSteps - kWarmup);
      EXPECT_LT(compressed * 3, static_cast<double>(size * sizeof(float)));  // it does compress
      testing::ExpectPsLinkBytes(*run.metrics[w], w, s, bytes);
    }
  }
  testing::ExpectShardsHold(services_, ranges_, kSteps, run.params[0]);
}

// Shards that keep 55 elements of each step's sum, under segments of 10 (a window of 40): the
// applier encodes codec segments that wrap around the sum's ring of slots, and the bits are the
// exchange's still.
TEST_P(PsCompressionTest, ASumKeptInPartEncodesTheBitsOfAWholeOne) {
  StartShards(/*window_bytes=*/40 * sizeof(float), /*sum_buffer_elements=*/55);
  const Gradients gradients = RandomGradients();
  const Workers run = RunWorkers(gradients);
  ExpectTheExchangesParameters(run, InMemory(gradients));
}

INSTANTIATE_TEST_SUITE_P(Codecs, PsCompressionTest, ::testing::Values("topk:0.1", "sign"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).substr(0, 4);
                         });

}  // namespace
}  // namespace ringside::server
