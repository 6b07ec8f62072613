// The trainer's long-lived parameter-server client against real shards over gRPC in this
// process: a generation's sums go through it, the generation announced is sticky (a generation
// connected after its successor was announced starts cancelled), the transfers carry the
// generation's shards and load keys, and nothing is summed without a connected generation.
#include "server/ps/shard_group.h"

#include <memory>
#include <string>
#include <vector>

#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/ps/ps_service.h"
#include "server/ps/shard_state.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 1000;
constexpr int kShards = 3;
constexpr uint64_t kSegmentBytes = 256;

class ShardGroupTest : public ::testing::Test {
 protected:
  // kShards static shards of generation `generation` for one worker, every parameter at 100.
  void StartShards(uint64_t generation) {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
    for (int s = 0; s < kShards; ++s) {
      auto state = ShardState::Create(ShardConfig{generation, 1, s},
                                      std::vector<float>(ranges[s].size(), 100.0f),
                                      OptimizerConfig{OptimizerKind::kSgd, 1.0f});
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<ParameterShardService>(kSegmentBytes));
      services_.back()->Serve(ShardGeneration{Shard::Synchronous(*std::move(state)), {}});
      auto started = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(started.ok()) << started.status();
      addresses_.push_back("127.0.0.1:" + std::to_string(started->port));
      servers_.push_back(*std::move(started));
    }
  }

  ShardGroupTopology Topology(uint64_t generation) const {
    ShardGroupTopology topology;
    topology.parameters = kParameters;
    topology.generation = generation;
    topology.shards = addresses_;
    topology.load_keys = {"load-0", "load-1", "load-2"};
    return topology;
  }

  ShardGroupOptions Options() const {
    ShardGroupOptions options;
    options.segment_bytes = kSegmentBytes;
    options.timeout = absl::Seconds(60);  // far beyond any test: reaching it is a failure
    return options;
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  Metrics metrics_{registry_};
  std::vector<std::unique_ptr<ParameterShardService>> services_;  // outlive the servers
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
};

TEST_F(ShardGroupTest, NothingIsSummedWithoutAConnectedGeneration) {
  StartShards(1);
  ShardGroup group(Options(), &metrics_);
  std::vector<float> gradient(kParameters, 1.0f);
  EXPECT_EQ(group.Sum(0, absl::MakeSpan(gradient)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(group.Connect().code(), absl::StatusCode::kFailedPrecondition);
  group.Reconfigure(Topology(1));
  // Configured for transfers only: still no step client.
  EXPECT_EQ(group.Sum(0, absl::MakeSpan(gradient)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(group.PushPullLinks().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(group.PrepareShare(absl::MakeSpan(gradient)), 0u);
  EXPECT_EQ(gradient, std::vector<float>(kParameters, 1.0f));
}

TEST_F(ShardGroupTest, AConnectedGenerationSumsAndItsTransfersReachItsShards) {
  StartShards(1);
  ShardGroup group(Options(), &metrics_);
  group.Reconfigure(Topology(1));
  ASSERT_TRUE(group.Connect().ok());
  for (int step = 0; step < 3; ++step) {
    std::vector<float> gradient(kParameters, 1.0f + step);
    ASSERT_TRUE(group.Sum(step, absl::MakeSpan(gradient)).ok());
    // One worker: the sum is its own share.
    EXPECT_EQ(gradient, std::vector<float>(kParameters, 1.0f + step));
  }
  const ShardTransferOptions transfer = group.transfer();
  EXPECT_EQ(transfer.shards, addresses_);
  EXPECT_EQ(transfer.keys, Topology(1).load_keys);
  EXPECT_EQ(transfer.segment_bytes, kSegmentBytes);
  ASSERT_EQ(group.ranges().size(), static_cast<size_t>(kShards));
  EXPECT_EQ(group.ranges().back().end, kParameters);
  // The shards' live parameters after three SGD steps of 1, 2 and 3.
  std::vector<float> read(kParameters);
  absl::StatusOr<uint64_t> step = ReadShardParameters(transfer, absl::MakeSpan(read));
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 3u);
  EXPECT_EQ(read, std::vector<float>(kParameters, 94.0f));
}

TEST_F(ShardGroupTest, AGenerationAnnouncedBeforeItsPredecessorConnectsCancelsIt) {
  StartShards(1);
  ShardGroup group(Options(), &metrics_);
  group.Supersede(2);  // the watch thread saw generation 2 before the trainer installed 1
  group.Reconfigure(Topology(1));
  ASSERT_TRUE(group.Connect().ok());
  std::vector<float> gradient(kParameters, 1.0f);
  EXPECT_EQ(group.Sum(0, absl::MakeSpan(gradient)).code(), absl::StatusCode::kCancelled);
}

TEST_F(ShardGroupTest, SupersedingCancelsOnlyOlderGenerations) {
  StartShards(1);
  ShardGroup group(Options(), &metrics_);
  group.Reconfigure(Topology(1));
  ASSERT_TRUE(group.Connect().ok());
  group.Supersede(1);  // the generation itself: nothing to end
  std::vector<float> gradient(kParameters, 1.0f);
  ASSERT_TRUE(group.Sum(0, absl::MakeSpan(gradient)).ok());
  group.Supersede(2);
  EXPECT_EQ(group.Sum(1, absl::MakeSpan(gradient)).code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace ringside::server
