// server::ReadShardParameters, the test evaluator's reader of the shards' live model, against real
// ParameterShard services on loopback: ranges joined in shard order with the step they hold,
// shards on different steps refused as a straddled read, the load key presented, a reply that
// does not fit its range refused.
#include "server/ps/shard_transfer.h"

#include <memory>
#include <vector>

#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"

namespace ringside::worker {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kParameters = 1001;
constexpr uint64_t kGeneration = 3;

class ShardReadTest : public ::testing::Test {
 protected:
  // Two shards over EvenRanges(kParameters, 2): element i holds i, after `steps[s]` steps.
  void Start(const std::vector<uint64_t>& steps, const std::string& credential = "") {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, 2);
    const OptimizerConfig sgd{OptimizerKind::kSgd, 1.0f};
    for (int s = 0; s < 2; ++s) {
      std::vector<float> values;
      for (uint64_t i = ranges[s].begin; i < ranges[s].end; ++i)
        values.push_back(static_cast<float>(i));
      // ExportState's layout, [steps]: SGD keeps nothing else.
      const std::vector<float> moments = {static_cast<float>(steps[s])};
      auto state = server::ShardState::Restore(server::ShardConfig{kGeneration, 2, s}, steps[s],
                                               values, moments, sgd);
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<server::ParameterShardService>(/*segment_bytes=*/256));
      if (!credential.empty()) services_.back()->SetMemberCredential(credential);
      services_.back()->Serve(server::ShardGeneration{*std::move(state), {}});
      auto server = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(server.ok()) << server.status();
      options_.shards.push_back("127.0.0.1:" + std::to_string(server->port));
      servers_.push_back(*std::move(server));
    }
    options_.segment_bytes = 256;
    options_.timeout = absl::Seconds(20);
  }

  server::ShardTransferOptions options_;
  std::vector<std::unique_ptr<server::ParameterShardService>> services_;
  std::vector<StartedServer> servers_;
};

TEST_F(ShardReadTest, JoinsTheRangesWithTheStepTheyHold) {
  ASSERT_NO_FATAL_FAILURE(Start({7, 7}));
  absl::StatusOr<server::ShardParameters> read = server::ReadShardParameters(options_, kParameters);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->step, 7u);
  ASSERT_EQ(read->parameters.size(), kParameters);
  for (uint64_t i = 0; i < kParameters; ++i)
    ASSERT_EQ(read->parameters[i], static_cast<float>(i)) << i;
}

TEST_F(ShardReadTest, ShardsOnDifferentStepsAreAStraddledRead) {
  ASSERT_NO_FATAL_FAILURE(Start({7, 8}));
  absl::StatusOr<server::ShardParameters> read = server::ReadShardParameters(options_, kParameters);
  ASSERT_EQ(read.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(read.status().message(), HasSubstr("ps-1 step 8"));
}

TEST_F(ShardReadTest, AnElasticShardWantsRankZerosLoadKey) {
  const std::string credential = Hmac("shard-read-test", "shard");
  ASSERT_NO_FATAL_FAILURE(Start({2, 2}, credential));
  absl::StatusOr<server::ShardParameters> read = server::ReadShardParameters(options_, kParameters);
  ASSERT_EQ(read.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(read.status().message(), HasSubstr("ps-0"));
  options_.keys = {ShardLoadKey(credential, kGeneration), ShardLoadKey(credential, kGeneration)};
  read = server::ReadShardParameters(options_, kParameters);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->step, 2u);
}

TEST_F(ShardReadTest, ARangeThatDoesNotFitIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start({1, 1}));
  absl::StatusOr<server::ShardParameters> read =
      server::ReadShardParameters(options_, kParameters + 10);
  ASSERT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("do not fit its range"));
}

}  // namespace
}  // namespace ringside::worker
