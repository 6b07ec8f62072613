// The shard's state machine alone: whole-or-nothing steps, deterministic sums, every refusal.
#include "ps/shard_state.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringside::server {
namespace {

std::string Bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

class ShardStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OptimizerConfig sgd;
    sgd.kind = OptimizerKind::kSgd;
    sgd.learning_rate = 1.0f;  // params -= sum of shares: easy to check
    auto state = ShardState::Create(ShardConfig{/*generation=*/3, /*workers=*/2, /*shard=*/1},
                                    {10, 20, 30}, sgd);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
  }

  absl::Status Push(int worker, uint64_t step, const std::vector<float>& share) {
    absl::Status status = state_->BeginPush(3, worker, step, share.size());
    if (status.ok()) status = state_->AddSegment(worker, step, 0, Bytes(share));
    if (status.ok()) status = state_->FinishPush(worker, step);
    return status;
  }

  std::unique_ptr<ShardState> state_;
};

TEST_F(ShardStateTest, AppliesAStepOnlyWhenEveryWorkerHasPushed) {
  std::vector<float> seen;
  state_->WhenApplied(0, [&](Parameters p) { seen = *p; });
  ASSERT_TRUE(Push(1, 0, {1, 2, 3}).ok());
  EXPECT_EQ(state_->current_step(), 0u);
  EXPECT_TRUE(seen.empty()) << "applied before worker 0 pushed";
  ASSERT_TRUE(Push(0, 0, {0.5f, 0.5f, 0.5f}).ok());
  EXPECT_EQ(state_->current_step(), 1u);
  EXPECT_EQ(seen, (std::vector<float>{8.5f, 17.5f, 26.5f}));
  std::vector<float> late;
  state_->WhenApplied(0, [&](Parameters p) { late = *p; });
  EXPECT_EQ(late, seen) << "a waiter for an applied step is answered at once";
}

TEST_F(ShardStateTest, RefusesBadPushesWithoutChangingAnything) {
  EXPECT_EQ(state_->BeginPush(2, 0, 0, 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_->BeginPush(3, 2, 0, 3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_->BeginPush(3, -1, 0, 3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_->BeginPush(3, 0, 1, 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_->BeginPush(3, 0, 0, 4).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(state_->BeginPush(3, 0, 0, 3).ok());
  EXPECT_EQ(state_->BeginPush(3, 0, 0, 3).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(state_->AddSegment(0, 0, 1, Bytes({1})).code(), absl::StatusCode::kInvalidArgument)
      << "out of sequence";
  EXPECT_EQ(state_->AddSegment(0, 0, 0, "abc").code(), absl::StatusCode::kInvalidArgument)
      << "ragged";
  EXPECT_EQ(state_->AddSegment(0, 0, 0, Bytes({1, 2, 3, 4})).code(),
            absl::StatusCode::kInvalidArgument)
      << "too long";
  ASSERT_TRUE(state_->AddSegment(0, 0, 0, Bytes({1, 2})).ok());
  EXPECT_EQ(state_->FinishPush(0, 0).code(), absl::StatusCode::kInvalidArgument) << "incomplete";
  EXPECT_EQ(state_->current_step(), 0u);
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{10, 20, 30}));
}

TEST_F(ShardStateTest, AnAbandonedPushIsForgottenAndCanBeRedone) {
  ASSERT_TRUE(state_->BeginPush(3, 0, 0, 3).ok());
  ASSERT_TRUE(state_->AddSegment(0, 0, 0, Bytes({100})).ok());
  state_->AbandonPush(0, 0);  // the worker's stream broke mid-step
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  EXPECT_EQ(state_->current_step(), 0u) << "half a share must never count";
  ASSERT_TRUE(Push(0, 0, {1, 1, 1}).ok());
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{8, 18, 28}));
  EXPECT_EQ(Push(0, 0, {1, 1, 1}).code(), absl::StatusCode::kFailedPrecondition)
      << "step 0 is applied";
}

TEST_F(ShardStateTest, SumsInRankOrderWhateverTheArrivalOrder) {
  // 1e8 + 1 - 1e8 in float depends on the order; rank order must always win.
  auto state =
      ShardState::Create(ShardConfig{1, 3, 0}, {0}, OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(state.ok());
  for (int worker : {2, 0, 1}) {
    const float value = worker == 0 ? 1e8f : worker == 1 ? 1.0f : -1e8f;
    ASSERT_TRUE((*state)->BeginPush(1, worker, 0, 1).ok());
    ASSERT_TRUE((*state)->AddSegment(worker, 0, 0, Bytes({value})).ok());
    ASSERT_TRUE((*state)->FinishPush(worker, 0).ok());
  }
  EXPECT_EQ((*state)->parameters()->at(0), -((1e8f + 1.0f) + -1e8f));
}

}  // namespace
}  // namespace ringside::server
