// A compressed parameter-server step in memory (server/ps/compressed_exchange.h): four workers and
// two shards over an odd parameter count, every codec (random-k too, which jobs take in the ring
// only: the exchange does not mind). The parameters every worker
// holds stay bit-identical to the shards' ranges, step after step and across a regroup's reset;
// every link carries exactly the cost model's bytes; a malformed push refuses the segment and
// changes nothing.
#include "server/ps/compressed_exchange.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/compression.h"
#include "common/cost_model.h"
#include "common/counter_rng.h"
#include "common/ranges.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 1001;
constexpr int kWorkers = 4;
constexpr int kShards = 2;
constexpr uint64_t kSegment = 128;
constexpr float kLearningRate = 0.1f;

void Sgd(absl::Span<float> parameters, absl::Span<const float> gradient) {
  for (size_t i = 0; i < parameters.size(); ++i) parameters[i] -= kLearningRate * gradient[i];
}

struct Cluster {
  explicit Cluster(const Compression& compression)
      : codec(MakeGradientCodec(compression)), ranges(EvenRanges(kParameters, kShards)) {
    for (int w = 0; w < kWorkers; ++w) {
      workers.push_back(std::make_unique<WorkerCompression>(*codec, 7, kParameters));
      worker_parameters.emplace_back(kParameters, 0.5f);
    }
    for (const ElementRange& range : ranges) {
      shards.push_back(std::make_unique<ShardCompression>(*codec, 7, range.begin, range.size()));
    }
    shard_parameters.assign(kParameters, 0.5f);
  }

  // One step: every link's bytes added to the counters.
  void Step(int64_t step) {
    std::vector<std::vector<float>> gradients(kWorkers, std::vector<float>(kParameters));
    for (int w = 0; w < kWorkers; ++w) {
      for (uint64_t i = 0; i < kParameters; ++i) {
        gradients[w][i] = static_cast<float>(
            CounterNormal(100 * static_cast<uint64_t>(step) + w, RngStream::kParameters, i));
      }
    }
    std::vector<std::vector<float>> replies(kWorkers, std::vector<float>(kParameters));
    for (int s = 0; s < kShards; ++s) {
      const ElementRange range = ranges[s];
      for (uint64_t at = 0; at < range.size(); at += kSegment) {
        const uint64_t n = std::min(kSegment, range.size() - at);
        std::vector<std::string> pushes;
        for (int w = 0; w < kWorkers; ++w) {
          pushes.push_back(workers[w]->EncodePush(
              step, range.begin + at,
              absl::MakeConstSpan(gradients[w]).subspan(range.begin + at, n)));
          push_bytes[w][s] += pushes.back().size();
        }
        const std::vector<absl::string_view> views(pushes.begin(), pushes.end());
        std::vector<float> sum(n, 0.0f), applied(n);
        ASSERT_TRUE(shards[s]->SumPushes(step, at, views, absl::MakeSpan(sum)).ok());
        const std::string reply = shards[s]->EncodeReply(step, at, sum, absl::MakeSpan(applied));
        Sgd(absl::MakeSpan(shard_parameters).subspan(range.begin + at, n), applied);
        for (int w = 0; w < kWorkers; ++w) {
          reply_bytes[w][s] += reply.size();
          ASSERT_TRUE(workers[w]
                          ->DecodeReply(step, range.begin + at, reply,
                                        absl::MakeSpan(replies[w]).subspan(range.begin + at, n))
                          .ok());
        }
      }
    }
    for (int w = 0; w < kWorkers; ++w) Sgd(absl::MakeSpan(worker_parameters[w]), replies[w]);
  }

  std::unique_ptr<GradientCodec> codec;
  std::vector<ElementRange> ranges;
  std::vector<std::unique_ptr<WorkerCompression>> workers;
  std::vector<std::unique_ptr<ShardCompression>> shards;
  std::vector<std::vector<float>> worker_parameters;
  std::vector<float> shard_parameters;
  uint64_t push_bytes[kWorkers][kShards] = {};
  uint64_t reply_bytes[kWorkers][kShards] = {};
};

TEST(CompressedExchangeTest, WorkersAndShardsHoldTheSameParametersAndTheCostModelsBytes) {
  for (const char* kind : {"topk:0.05", "sign", "randomk:0.05"}) {
    SCOPED_TRACE(kind);
    Cluster cluster(*ParseCompression(kind));
    constexpr int kSteps = 20;
    for (int64_t step = 0; step < kSteps; ++step) {
      cluster.Step(step);
      if (step == 9) {  // a regroup: every residual reset, by the documented rule
        for (auto& worker : cluster.workers) worker->Reset();
        for (auto& shard : cluster.shards) shard->Reset();
      }
    }
    for (int w = 0; w < kWorkers; ++w) {
      EXPECT_EQ(cluster.worker_parameters[w], cluster.shard_parameters) << "worker " << w;
    }
    EXPECT_NE(cluster.shard_parameters, std::vector<float>(kParameters, 0.5f)) << "it trained";
    for (int s = 0; s < kShards; ++s) {
      const uint64_t expected =
          kSteps *
          CompressedLinkBytes(*cluster.codec, SegmentLengths(cluster.ranges[s].size(), kSegment));
      for (int w = 0; w < kWorkers; ++w) {
        EXPECT_EQ(cluster.push_bytes[w][s], expected) << "worker " << w << " -> shard " << s;
        EXPECT_EQ(cluster.reply_bytes[w][s], expected) << "shard " << s << " -> worker " << w;
      }
    }
    // A residual is left behind on both sides, and gone after a reset.
    const auto nonzero = [](float r) { return r != 0.0f; };
    EXPECT_TRUE(std::any_of(cluster.workers[0]->residual().begin(),
                            cluster.workers[0]->residual().end(), nonzero));
    // Random-k's pushes are non-zero only at the segment's drawn coordinates, and its reply
    // sends those very coordinates: the shard is left nothing. The others leave some behind.
    EXPECT_EQ(std::any_of(cluster.shards[1]->residual().begin(),
                          cluster.shards[1]->residual().end(), nonzero),
              std::string(kind) != "randomk:0.05");
    cluster.shards[1]->Reset();
    for (const float r : cluster.shards[1]->residual()) ASSERT_EQ(r, 0.0f);
  }
}

TEST(CompressedExchangeTest, AMalformedPushRefusesTheSegmentAndChangesNothing) {
  const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(*ParseCompression("topk:0.25"));
  ShardCompression shard(*codec, 7, /*range_begin=*/100, /*range_elements=*/8);
  std::vector<std::string> pushes;
  for (int w = 0; w < 3; ++w) {
    WorkerCompression worker(*codec, 7, 108);
    std::vector<float> gradient(8);
    for (int i = 0; i < 8; ++i) gradient[i] = static_cast<float>((i * (w + 3)) % 5) - 2.0f;
    pushes.push_back(worker.EncodePush(4, 100, gradient));
  }
  // The last worker's second index repeats its first (k = 2: u32 count, two indices, two values).
  std::string bad = pushes[2];
  std::memcpy(&bad[8], &bad[4], 4);
  const std::vector<absl::string_view> views = {pushes[0], pushes[1], bad};
  std::vector<float> sum(8, 1.0f);
  const absl::Status refused = shard.SumPushes(4, 0, views, absl::MakeSpan(sum));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("worker 2's push of step 4"), absl::string_view::npos)
      << refused;
  EXPECT_EQ(sum, std::vector<float>(8, 1.0f)) << "the good pushes were added before the bad one";
  for (const float r : shard.residual()) EXPECT_EQ(r, 0.0f);
  const std::vector<absl::string_view> good = {pushes[0], pushes[1], pushes[2]};
  EXPECT_TRUE(shard.SumPushes(4, 0, good, absl::MakeSpan(sum)).ok());
  EXPECT_NE(sum, std::vector<float>(8, 1.0f));
}

}  // namespace
}  // namespace ringside::server
