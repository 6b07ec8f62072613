// server::ReadShardParameters, the test evaluator's reader of the shards' live model, against real
// ParameterShard services on loopback: ranges joined in shard order with the step they hold,
// shards on different steps refused as a straddled read, the load key presented, a reply that
// does not fit its range refused. server::ReadShardStates, a regroup's reader of the state the
// shards hold under staleness and backup workers: parameters and Adam's moments joined into the
// whole state at the most advanced shard's step, a later generation's load key, refusals.
#include "server/ps/shard_transfer.h"

#include <memory>
#include <vector>

#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"
#include "server/ps/push_pull_shard.h"

namespace ringside::worker {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kParameters = 1001;
constexpr uint64_t kGeneration = 3;

// Shard services on loopback, one per Serve, in shard order.
class ServedShards : public ::testing::Test {
 protected:
  ServedShards() {
    options_.segment_bytes = 256;
    options_.timeout = absl::Seconds(20);
  }
  void Serve(server::ShardGeneration generation, const std::string& credential) {
    services_.push_back(std::make_unique<server::ParameterShardService>(/*segment_bytes=*/256));
    if (!credential.empty()) services_.back()->SetMemberCredential(credential);
    services_.back()->Serve(std::move(generation));
    auto server = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    options_.shards.push_back("127.0.0.1:" + std::to_string(server->port));
    servers_.push_back(*std::move(server));
  }

  server::ShardTransferOptions options_;
  std::vector<std::unique_ptr<server::ParameterShardService>> services_;
  std::vector<StartedServer> servers_;
};

class ShardReadTest : public ServedShards {
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
      ASSERT_NO_FATAL_FAILURE(Serve(
          server::ShardGeneration{server::Shard::Synchronous(*std::move(state)), {}}, credential));
    }
  }
};

TEST_F(ShardReadTest, JoinsTheRangesWithTheStepTheyHold) {
  ASSERT_NO_FATAL_FAILURE(Start({7, 7}));
  std::vector<float> parameters(kParameters, -1.0f);
  absl::StatusOr<uint64_t> step = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 7u);
  for (uint64_t i = 0; i < kParameters; ++i) ASSERT_EQ(parameters[i], static_cast<float>(i)) << i;
}

TEST_F(ShardReadTest, ShardsOnDifferentStepsAreAStraddledRead) {
  ASSERT_NO_FATAL_FAILURE(Start({7, 8}));
  std::vector<float> parameters(kParameters);
  absl::StatusOr<uint64_t> read = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_EQ(read.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(read.status().message(), HasSubstr("ps-1 step 8"));
}

TEST_F(ShardReadTest, AnElasticShardWantsRankZerosLoadKey) {
  const std::string credential = Hmac("shard-read-test", "shard");
  ASSERT_NO_FATAL_FAILURE(Start({2, 2}, credential));
  std::vector<float> parameters(kParameters);
  absl::StatusOr<uint64_t> read = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_EQ(read.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(read.status().message(), HasSubstr("ps-0"));
  options_.keys = {ShardLoadKey(credential, kGeneration), ShardLoadKey(credential, kGeneration)};
  read = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_EQ(read.status().code(), absl::StatusCode::kPermissionDenied)
      << "keys that claim no generation";
  options_.generation = kGeneration;
  read = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, 2u);
}

TEST_F(ShardReadTest, ARangeThatDoesNotFitIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start({1, 1}));
  std::vector<float> parameters(kParameters + 10);
  absl::StatusOr<uint64_t> read = server::ReadShardParameters(options_, absl::MakeSpan(parameters));
  ASSERT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("do not fit its range"));
}

// Two StaleShards (staleness 1, two workers, Adam) behind services, each with some updates.
class ShardStateReadTest : public ServedShards {
 protected:
  void SetUp() override {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, 2);
    for (int s = 0; s < 2; ++s) {
      std::vector<float> values(ranges[s].size(), 0.5f);
      auto shard = server::PushPullShard::Create(server::PushPullShardConfig{kGeneration, 2, s, 1},
                                                 values, {}, adam_);
      ASSERT_TRUE(shard.ok()) << shard.status();
      stale_.push_back(std::shared_ptr<server::PushPullShard>(std::move(*shard)));
      ASSERT_NO_FATAL_FAILURE(
          Serve(server::ShardGeneration{server::Shard::PushPull(stale_.back()), {}, ranges[s]},
                credential_));
    }
    // ps-0: both workers' step 0 and worker 0's step 1; ps-1: worker 0's step 0 only (worker 0
    // was lost between its pushes to the two shards).
    const auto push = [&](int s, int worker, uint64_t step) {
      ASSERT_TRUE(
          stale_[s]->Push(worker, step, 0, std::vector<float>(ranges[s].size(), 0.25f)).ok());
    };
    push(0, 0, 0);
    push(0, 1, 0);
    push(0, 0, 1);
    push(1, 0, 0);
    ASSERT_TRUE(stale_[0]->AwaitSettled(3, absl::Seconds(20)).ok());
    ASSERT_TRUE(stale_[1]->AwaitSettled(1, absl::Seconds(20)).ok());
  }
  void UseKeysOf(uint64_t generation) {
    options_.keys = {ShardLoadKey(credential_, generation), ShardLoadKey(credential_, generation)};
  }

  const OptimizerConfig adam_{OptimizerKind::kAdam, 0.01f};
  const std::string credential_ = Hmac("shard-state-read-test", "shard");
  std::vector<std::shared_ptr<server::PushPullShard>> stale_;
};

TEST_F(ShardStateReadTest, JoinsParametersAndMomentsAtTheMostAdvancedShardsStep) {
  UseKeysOf(kGeneration + 1);  // the regroup's generation reads what the last one left
  absl::StatusOr<server::JobState> read =
      server::ReadShardStates(options_, kGeneration + 1, kParameters, adam_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->step, 2u);  // worker 0 completed two steps on ps-0: none is applied twice
  std::vector<float> expected_state(Optimizer::StateSize(adam_.kind, kParameters));
  std::vector<float> expected_parameters;
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, 2);
  for (int s = 0; s < 2; ++s) {
    const std::vector<float> whole = stale_[s]->ExportState();  // [parameters..., optimiser...]
    expected_parameters.insert(expected_parameters.end(), whole.begin(),
                               whole.begin() + ranges[s].size());
    ASSERT_TRUE(PlaceOptimizerStateRange(absl::MakeConstSpan(whole).subspan(ranges[s].size()),
                                         kParameters, ranges[s].begin, ranges[s].end,
                                         absl::MakeSpan(expected_state))
                    .ok());
  }
  expected_state[0] = 2.0f;  // the optimiser's step count is the job's step
  EXPECT_EQ(read->parameters, expected_parameters);
  EXPECT_EQ(read->optimizer_state, expected_state);
  EXPECT_NE(read->parameters[0], 0.5f);  // the updates are in
}

TEST_F(ShardStateReadTest, OnlyTheServedOrALaterGenerationsRankZeroMayRead) {
  EXPECT_EQ(server::ReadShardStates(options_, kGeneration, kParameters, adam_).status().code(),
            absl::StatusCode::kPermissionDenied);  // no key
  UseKeysOf(kGeneration + 1);
  EXPECT_EQ(server::ReadShardStates(options_, kGeneration + 2, kParameters, adam_).status().code(),
            absl::StatusCode::kPermissionDenied);  // another generation's key
  UseKeysOf(kGeneration - 1);
  EXPECT_EQ(server::ReadShardStates(options_, kGeneration - 1, kParameters, adam_).status().code(),
            absl::StatusCode::kFailedPrecondition);  // older than what the shard serves
  UseKeysOf(kGeneration);
  EXPECT_TRUE(server::ReadShardStates(options_, kGeneration, kParameters, adam_).ok());
  EXPECT_EQ(server::ReadShardStates(options_, kGeneration, kParameters + 3, adam_).status().code(),
            absl::StatusCode::kInvalidArgument);  // ranges that do not fit
}

// A shard that left (a drain) still serves its range: the next generation's shards alone do not
// cover the parameters, so rank 0 reads the departed shard too, with its own key for it, and
// gets the very state both shards held. A shard that has delivered its whole state to a later
// generation's rank 0 knows it (what a leaving shard waits for).
TEST_F(ShardStateReadTest, ADepartedShardsRangeIsReadWhenTheShardsAloneDoNotCoverTheParameters) {
  UseKeysOf(kGeneration + 1);
  absl::StatusOr<server::JobState> both =
      server::ReadShardStates(options_, kGeneration + 1, kParameters, adam_);
  ASSERT_TRUE(both.ok()) << both.status();

  server::ShardTransferOptions without = options_;
  without.shards = {options_.shards[0]};
  without.keys = {options_.keys[0]};
  absl::StatusOr<server::JobState> short_of_one =
      server::ReadShardStates(without, kGeneration + 1, kParameters, adam_);
  ASSERT_EQ(short_of_one.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_of_one.status().message(), HasSubstr("do not cover"));

  server::ShardTransferOptions with_departed = without;
  with_departed.departed = {options_.shards[1]};
  with_departed.departed_keys = {ShardLoadKey(credential_, kGeneration + 2)};
  absl::StatusOr<server::JobState> wrong_key =
      server::ReadShardStates(with_departed, kGeneration + 2, kParameters, adam_);
  EXPECT_EQ(wrong_key.status().code(), absl::StatusCode::kPermissionDenied)
      << "ps-0's key is for generation " << kGeneration + 1 << ": " << wrong_key.status();
  with_departed.departed_keys = {options_.keys[1]};
  absl::StatusOr<server::JobState> handed_over =
      server::ReadShardStates(with_departed, kGeneration + 1, kParameters, adam_);
  ASSERT_TRUE(handed_over.ok()) << handed_over.status();
  EXPECT_EQ(handed_over->step, both->step);
  EXPECT_EQ(handed_over->parameters, both->parameters);
  EXPECT_EQ(handed_over->optimizer_state, both->optimizer_state);
  EXPECT_TRUE(services_[1]->AwaitStateRead(kGeneration, absl::Now() + absl::Seconds(20)))
      << "the departed shard delivered its state to generation " << kGeneration + 1;

  // Shards that cover the parameters need no departed one (this one is not even there).
  server::ShardTransferOptions covered = options_;
  covered.departed = {"127.0.0.1:1"};
  covered.departed_keys = {"no key"};
  EXPECT_TRUE(server::ReadShardStates(covered, kGeneration + 1, kParameters, adam_).ok());
}

// A read by the generation a shard serves is no hand-over to a later one.
TEST_F(ShardStateReadTest, AReadOfTheServedGenerationIsNoHandOver) {
  UseKeysOf(kGeneration);
  ASSERT_TRUE(server::ReadShardStates(options_, kGeneration, kParameters, adam_).ok());
  EXPECT_FALSE(services_[0]->AwaitStateRead(kGeneration, absl::Now()));
}

// A regroup that keeps the shard map (a worker drained): over gRPC, with the new generation's
// load keys, each shard keeps the state it serves (nothing of it on the wire), which a whole read
// then finds unchanged. The shards were a step apart (worker 0 was lost between its pushes): both
// resume at the later step, as the whole read joins them, and a read of the parameters alone
// finds them level.
TEST_F(ShardStateReadTest, ShardsKeepTheStateTheyServeForTheNextGeneration) {
  UseKeysOf(kGeneration + 1);
  absl::StatusOr<server::JobState> before =
      server::ReadShardStates(options_, kGeneration + 1, kParameters, adam_);
  ASSERT_TRUE(before.ok()) << before.status();
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, 2);
  for (int s = 0; s < 2; ++s) {
    services_[s]->SetJob(server::ShardJob{s, ranges[s], adam_, kGeneration + 1,
                                          /*backup_workers=*/0, /*staleness=*/1});
  }
  server::ShardTransferOptions wrong = options_;
  wrong.keys = {ShardLoadKey(credential_, kGeneration + 2),
                ShardLoadKey(credential_, kGeneration + 2)};
  EXPECT_EQ(
      server::KeepShardStates(wrong, kGeneration + 1, 3, kParameters, adam_.kind).status().code(),
      absl::StatusCode::kPermissionDenied);
  absl::StatusOr<uint64_t> kept =
      server::KeepShardStates(options_, kGeneration + 1, /*workers=*/3, kParameters, adam_.kind);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, before->step);
  for (int s = 0; s < 2; ++s) {
    const server::ShardIdentity& served = services_[s]->current()->shard->identity();
    EXPECT_EQ(served.generation, kGeneration + 1);
    EXPECT_EQ(served.workers, 3);
  }
  absl::StatusOr<server::JobState> after =
      server::ReadShardStates(options_, kGeneration + 1, kParameters, adam_);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->step, before->step);
  EXPECT_EQ(after->parameters, before->parameters);
  EXPECT_EQ(after->optimizer_state, before->optimizer_state);
  server::ShardTransferOptions parameters = options_;
  parameters.generation = kGeneration + 1;
  std::vector<float> out(kParameters);
  absl::StatusOr<uint64_t> read = server::ReadShardParameters(parameters, absl::MakeSpan(out));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, before->step);
  EXPECT_EQ(out, before->parameters);
}

// Rank 0 loads the shards from its live parameters and optimiser (LoadShards reads them in
// place, a segment at a time): with segments of 3 floats, which straddle each range's
// parameters, step count and moments, the shards hold exactly the state's ranges, as read back.
TEST_F(ServedShards, ALoadStreamsTheLiveStateAndTheShardsHoldItsRanges) {
  const OptimizerConfig adam{OptimizerKind::kAdam, 0.01f};
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, 2);
  const std::string credential = Hmac("shard-load-test", "shard");
  for (int s = 0; s < 2; ++s) {
    services_.push_back(std::make_unique<server::ParameterShardService>(/*segment_bytes=*/256));
    services_.back()->SetMemberCredential(credential);
    services_.back()->SetJob(
        server::ShardJob{s, ranges[s], adam, kGeneration, /*backup_workers=*/0, /*staleness=*/1});
    auto server = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    options_.shards.push_back("127.0.0.1:" + std::to_string(server->port));
    servers_.push_back(*std::move(server));
  }
  options_.keys = {ShardLoadKey(credential, kGeneration), ShardLoadKey(credential, kGeneration)};
  options_.segment_bytes = 3 * sizeof(float);
  auto optimizer = Optimizer::Create(adam, kParameters);
  ASSERT_TRUE(optimizer.ok());
  std::vector<float> parameters(kParameters), gradient(kParameters);
  for (uint64_t i = 0; i < kParameters; ++i) {
    parameters[i] = 0.001f * static_cast<float>(i);
    gradient[i] = static_cast<float>(i % 7) - 3.0f;
  }
  for (int step = 0; step < 4; ++step) {
    ASSERT_TRUE(optimizer->Step(absl::MakeSpan(parameters), gradient).ok());
  }
  ASSERT_TRUE(server::LoadShards(options_, kGeneration, /*workers=*/2,
                                 server::JobStateView{4, parameters, &*optimizer})
                  .ok());
  absl::StatusOr<server::JobState> read =
      server::ReadShardStates(options_, kGeneration, kParameters, adam);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->step, 4u);
  EXPECT_EQ(read->parameters, parameters);
  EXPECT_EQ(read->optimizer_state, optimizer->ExportState());
}

TEST_F(ShardReadTest, ASynchronousShardHoldsNoStateToRead) {
  ASSERT_NO_FATAL_FAILURE(Start({1, 1}));
  absl::StatusOr<server::JobState> read = server::ReadShardStates(
      options_, kGeneration, kParameters, OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("every worker holds"));
}

}  // namespace
}  // namespace ringside::worker
