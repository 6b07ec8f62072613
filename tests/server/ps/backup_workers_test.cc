// A shard with backup workers (ShardConfig::backup_workers, server/ps/sync_rules.h): a step is
// applied with the first N - b whole shares, summed in rank order; a later push of that step is
// dropped (counted), never applied, and answered with the step's sum; the next step waits until
// every worker began the previous one. Order is forced by the calls themselves, never by time:
// whether a step was handed over shows in whether a push of the next step is accepted.
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "server/ps/shard_state.h"

namespace ringside::server {
namespace {

constexpr uint64_t kGeneration = 4;
constexpr uint64_t kRange = 2;

std::string Bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

Summed WaitSummed(ShardState& state, uint64_t step, uint64_t after = 0, int worker = -1) {
  absl::Notification answered;
  Summed result;
  state.WhenSummed(
      step, after,
      [&](Summed summed) {
        result = std::move(summed);
        answered.Notify();
      },
      worker);
  answered.WaitForNotification();
  return result;
}

std::vector<float> SumOf(const Summed& summed) {
  return summed.sum == nullptr ? std::vector<float>{} : *summed.sum;
}

// Worker w's share of every step: distinct powers of ten, so a sum names who is in it.
std::vector<float> Share(int worker) {
  const float unit = worker == 0 ? 1.0f : (worker == 1 ? 10.0f : 100.0f);
  return {unit, 2 * unit};
}

class BackupWorkersTest : public ::testing::Test {
 protected:
  // Three workers, one backup; SGD with rate 1 from zeros, so parameters are minus the sums.
  void SetUp() override {
    auto created = ShardState::Create(ShardConfig{kGeneration, 3, 0, /*backup_workers=*/1},
                                      std::vector<float>(kRange, 0.0f),
                                      OptimizerConfig{OptimizerKind::kSgd, 1.0f},
                                      ShardStepMetrics{nullptr, nullptr, nullptr, &dropped_});
    ASSERT_TRUE(created.ok()) << created.status();
    state_ = std::move(*created);
  }

  absl::Status PushWhole(int worker, uint64_t step) {
    if (absl::Status s = state_->BeginPush(kGeneration, worker, step, kRange); !s.ok()) return s;
    if (absl::Status s = state_->AddSegment(worker, step, 0, Bytes(Share(worker))); !s.ok()) {
      return s;
    }
    return state_->FinishPush(worker, step);
  }

  prometheus::Counter dropped_;
  std::unique_ptr<ShardState> state_;
};

TEST_F(BackupWorkersTest, AStepIsAppliedWithTheFirstQuorumAndALatePushIsDroppedButAnswered) {
  ASSERT_TRUE(PushWhole(2, 0).ok());
  ASSERT_TRUE(PushWhole(0, 0).ok());  // the quorum: ranks 0 and 2, summed in rank order
  EXPECT_EQ(SumOf(WaitSummed(*state_, 0)), (std::vector<float>{101, 202}));
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{-101, -202}));
  EXPECT_EQ(dropped_.Value(), 0);

  ASSERT_TRUE(PushWhole(1, 0).ok());  // late: accepted, dropped, answered with the same sum
  EXPECT_EQ(dropped_.Value(), 1);
  EXPECT_EQ(SumOf(WaitSummed(*state_, 0)), (std::vector<float>{101, 202}));
  EXPECT_EQ(state_->BeginPush(kGeneration, 1, 0, kRange).code(), absl::StatusCode::kAlreadyExists);

  // Never applied to a later step: step 1's sum holds only its own quorum's shares.
  ASSERT_TRUE(PushWhole(1, 1).ok());
  ASSERT_TRUE(PushWhole(0, 1).ok());
  EXPECT_EQ(SumOf(WaitSummed(*state_, 1)), (std::vector<float>{11, 22}));
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{-112, -224}));
  EXPECT_EQ(dropped_.Value(), 1);
}

TEST_F(BackupWorkersTest, APushStillArrivingWhenTheQuorumIsInIsDroppedWhole) {
  ASSERT_TRUE(state_->BeginPush(kGeneration, 1, 0, kRange).ok());
  ASSERT_TRUE(state_->AddSegment(1, 0, 0, Bytes({10})).ok());  // half its share
  ASSERT_TRUE(PushWhole(0, 0).ok());
  ASSERT_TRUE(PushWhole(2, 0).ok());
  EXPECT_EQ(dropped_.Value(), 1);
  // Its reply covers only what it has pushed: its buffer still holds the rest it will send.
  const Summed first = WaitSummed(*state_, 0, /*after=*/0, /*worker=*/1);
  EXPECT_EQ(first.end, 1u);
  // Its rest is accepted and discarded; its step's answer is the quorum's sum.
  EXPECT_EQ(state_->AddSegment(1, 0, 0, Bytes({20})).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(state_->AddSegment(1, 0, 1, Bytes({20})).ok());
  ASSERT_TRUE(state_->FinishPush(1, 0).ok());
  const Summed rest = WaitSummed(*state_, 0, /*after=*/1, /*worker=*/1);
  EXPECT_EQ(rest.end, kRange);
  EXPECT_EQ(SumOf(rest), (std::vector<float>{101, 202}));
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{-101, -202}));
  EXPECT_EQ(dropped_.Value(), 1);  // counted once
}

TEST_F(BackupWorkersTest, TheNextStepWaitsUntilEveryWorkerBeganThePreviousOne) {
  ASSERT_TRUE(PushWhole(0, 0).ok());
  ASSERT_TRUE(PushWhole(2, 0).ok());
  ASSERT_TRUE(PushWhole(0, 1).ok());
  ASSERT_TRUE(PushWhole(2, 1).ok());
  // A quorum of step 1 is in, but worker 1 has not begun step 0: step 1 is still collected, so
  // step 2 is ahead of the shard (a step handed over would have made it the current one).
  EXPECT_EQ(state_->BeginPush(kGeneration, 0, 2, kRange).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(state_->BeginPush(kGeneration, 1, 0, kRange).ok());  // late for step 0: dropped
  EXPECT_EQ(dropped_.Value(), 1);
  // That released step 1, applied without worker 1 (it never pushed it).
  EXPECT_EQ(SumOf(WaitSummed(*state_, 1)), (std::vector<float>{101, 202}));
  // Worker 1 asks for step 0's sum only now, a step later: the shard still has it.
  EXPECT_EQ(SumOf(WaitSummed(*state_, 0)), (std::vector<float>{101, 202}));
  EXPECT_EQ(*state_->parameters(), (std::vector<float>{-202, -404}));
  // Its push of step 1 is now late as well, and dropped; step 0 is two steps back: refused.
  ASSERT_TRUE(PushWhole(1, 1).ok());
  EXPECT_EQ(dropped_.Value(), 2);
  EXPECT_EQ(state_->BeginPush(kGeneration, 1, 1, kRange).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(state_->BeginPush(kGeneration, 1, 0, kRange).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(PushWhole(2, 2).ok());
  ASSERT_TRUE(PushWhole(1, 2).ok());
  EXPECT_EQ(SumOf(WaitSummed(*state_, 2)), (std::vector<float>{110, 220}));
  EXPECT_EQ(state_->BeginPush(kGeneration, 0, 0, kRange).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(BackupWorkersConfigTest, ANegativeCountIsRefused) {
  EXPECT_EQ(ShardState::Create(ShardConfig{1, 2, 0, -1}, {0.0f},
                               OptimizerConfig{OptimizerKind::kSgd, 1.0f})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::server
