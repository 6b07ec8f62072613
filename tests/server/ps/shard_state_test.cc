// The shard's state machine alone: whole-or-nothing steps, deterministic sums, every refusal,
// steps summed, applied and answered segment by segment as every share covers them (the bits of
// a whole-range reference whatever the interleaving), a worker lost mid-step, reads that copy
// nothing up front (what a later step overwrites is saved for them, within a budget), and steps
// applied on the shard's own applier thread without holding pushes, reads or Close().
#include "server/ps/shard_state.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/support/ps_test_hooks.h"

namespace ringside::server {
namespace {

std::string Bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// Waits until `step` is applied (the applier thread's work is asynchronous); the step's summed
// gradient (what the workers are answered with), or empty if the state was closed first.
std::vector<float> WaitApplied(ShardState& state, uint64_t step) {
  absl::Notification applied;
  std::vector<float> values;
  state.WhenApplied(step, [&](Values p) {
    if (p != nullptr) values = *p;
    applied.Notify();
  });
  applied.WaitForNotification();
  return values;
}

// A ReadApplied whose answer the test waits for later.
class PendingRead {
 public:
  explicit PendingRead(ShardState& state) {
    state.ReadApplied([this](absl::StatusOr<ShardState::Applied> applied) {
      applied_ = std::move(applied);
      answered_.Notify();
    });
  }
  bool answered() const { return answered_.HasBeenNotified(); }
  const absl::StatusOr<ShardState::Applied>& Wait() {
    answered_.WaitForNotification();
    return applied_;
  }

 private:
  absl::Notification answered_;
  absl::StatusOr<ShardState::Applied> applied_;
};

// WaitApplied's sum itself, as a reply holds it (null if the state was closed first).
Values WaitAppliedSum(ShardState& state, uint64_t step) {
  absl::Notification applied;
  Values sum;
  state.WhenApplied(step, [&](Values p) {
    sum = std::move(p);
    applied.Notify();
  });
  applied.WaitForNotification();
  return sum;
}

// Waits for WhenSummed's answer: more than `after` elements of `step`'s sum final, or the end.
Summed WaitSummed(ShardState& state, uint64_t step, uint64_t after) {
  absl::Notification answered;
  Summed result;
  state.WhenSummed(step, after, [&](Summed summed) {
    result = std::move(summed);
    answered.Notify();
  });
  answered.WaitForNotification();
  return result;
}

// A test hook for the applier: records every step it applies and holds the applier in the
// middle of step `held_step` (summed, optimiser not yet run) until released.
class HeldApply {
 public:
  explicit HeldApply(uint64_t held_step = 0) : held_step_(held_step) {}
  ~HeldApply() { Release(); }

  PsTestHooks::ApplyHook Hook() {
    return [this](uint64_t step, uint64_t /*begin*/, uint64_t /*end*/) {
      steps_.push_back(step);
      if (step != held_step_) return;
      applying_.Notify();
      release_.WaitForNotification();
    };
  }
  void WaitUntilApplying() { applying_.WaitForNotification(); }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }
  // Read only once the applier is gone or held.
  const std::vector<uint64_t>& steps() const { return steps_; }

 private:
  const uint64_t held_step_;
  std::vector<uint64_t> steps_;
  absl::Notification applying_;
  absl::Notification release_;
};

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
  // A held applier is let go before the state joins it.
  void TearDown() override {
    held_.Release();
    state_.reset();
  }

  absl::Status Push(int worker, uint64_t step, const std::vector<float>& share) {
    absl::Status status = state_->BeginPush(3, worker, step, share.size());
    if (status.ok()) status = state_->AddSegment(worker, step, 0, Bytes(share));
    if (status.ok()) status = state_->FinishPush(worker, step);
    return status;
  }

  HeldApply held_;
  std::unique_ptr<ShardState> state_;
};

TEST_F(ShardStateTest, AppliesAStepOnlyWhenEveryWorkerHasPushed) {
  std::vector<float> seen;
  state_->WhenApplied(0, [&](Values p) { seen = *p; });
  ASSERT_TRUE(Push(1, 0, {1, 2, 3}).ok());
  EXPECT_EQ(state_->current_step(), 0u);
  EXPECT_TRUE(seen.empty()) << "applied before worker 0 pushed";
  ASSERT_TRUE(Push(0, 0, {0.5f, 0.5f, 0.5f}).ok());
  EXPECT_EQ(WaitApplied(*state_, 0), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(state_->current_step(), 1u);
  EXPECT_EQ(seen, (std::vector<float>{1.5f, 2.5f, 3.5f})) << "the sum, in rank order";
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{8.5f, 17.5f, 26.5f}))
      << "the shard applies the optimiser to its own copy too";
  std::vector<float> late;
  state_->WhenApplied(0, [&](Values p) { late = *p; });
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
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{10, 20, 30}));
}

TEST_F(ShardStateTest, AnAbandonedPushIsForgottenAndCanBeRedone) {
  ASSERT_TRUE(state_->BeginPush(3, 0, 0, 3).ok());
  ASSERT_TRUE(state_->AddSegment(0, 0, 0, Bytes({100})).ok());
  state_->AbandonPush(0, 0);  // the worker's stream broke mid-step
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  EXPECT_EQ(state_->current_step(), 0u) << "half a share must never count";
  ASSERT_TRUE(Push(0, 0, {1, 1, 1}).ok());
  EXPECT_EQ(WaitApplied(*state_, 0), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{8, 18, 28}));
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
  EXPECT_EQ(WaitApplied(**state, 0), std::vector<float>{(1e8f + 1.0f) + -1e8f});
  EXPECT_EQ(*(*state)->parameters().value(), std::vector<float>{-((1e8f + 1.0f) + -1e8f)});
}

TEST_F(ShardStateTest, AppliesOnTheShardsOwnThreadNotThePushingOne) {
  std::thread::id optimiser_thread;
  std::thread::id callback_thread;
  absl::Notification applied;
  PsTestHooks::SetApplyHook(*state_, [&](uint64_t, uint64_t, uint64_t) {
    optimiser_thread = std::this_thread::get_id();
  });
  state_->WhenApplied(0, [&](Values) {
    callback_thread = std::this_thread::get_id();
    applied.Notify();
  });
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  ASSERT_TRUE(Push(0, 0, {1, 1, 1}).ok());  // the last share: the step is handed over
  applied.WaitForNotification();
  EXPECT_NE(optimiser_thread, std::this_thread::get_id());
  EXPECT_EQ(callback_thread, optimiser_thread) << "callbacks run on the applier thread";
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{8, 18, 28}));
}

TEST_F(ShardStateTest, PushesAndReadsDoNotWaitForAStepBeingApplied) {
  PsTestHooks::SetApplyHook(*state_, held_.Hook());
  ASSERT_TRUE(Push(1, 0, {1, 2, 3}).ok());
  ASSERT_TRUE(Push(0, 0, {0.5f, 0.5f, 0.5f}).ok()) << "the last push returns before the apply";
  held_.WaitUntilApplying();  // step 0 summed, its optimiser step not run: the applier is held

  // Reads see whole steps only: the count before step 0, and the parameters once it ends (the
  // read returns now and is answered then, never with half of a step).
  EXPECT_EQ(state_->current_step(), 0u);
  PendingRead read(*state_);
  EXPECT_FALSE(read.answered()) << "answered while step 0 was part-way applied";
  // Step 0 is complete, so step 1 is collected meanwhile: the lock is free.
  EXPECT_EQ(Push(0, 0, {1, 1, 1}).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Push(1, 1, {1, 1, 1}).ok());

  held_.Release();
  EXPECT_EQ(WaitApplied(*state_, 0), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  const absl::StatusOr<ShardState::Applied>& after_step_0 = read.Wait();
  ASSERT_TRUE(after_step_0.ok()) << after_step_0.status();
  EXPECT_EQ(after_step_0->step, 1u);
  EXPECT_EQ(*after_step_0->values, (std::vector<float>{8.5f, 17.5f, 26.5f}));
  ASSERT_TRUE(Push(0, 1, {1, 1, 1}).ok());
  EXPECT_EQ(WaitApplied(*state_, 1), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{6.5f, 15.5f, 24.5f}));
}

TEST_F(ShardStateTest, ClosingDuringAnApplyAnswersTheWaitersAndAppliesNothingMore) {
  PsTestHooks::SetApplyHook(*state_, held_.Hook());
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  ASSERT_TRUE(Push(0, 0, {1, 1, 1}).ok());
  held_.WaitUntilApplying();
  ASSERT_TRUE(Push(0, 1, {1, 1, 1}).ok());
  ASSERT_TRUE(Push(1, 1, {1, 1, 1}).ok());  // step 1 complete too, queued behind step 0

  bool answered_with_nothing = false;
  state_->WhenApplied(1, [&](Values p) { answered_with_nothing = p == nullptr; });
  state_->Close();  // returns although step 0 is being applied
  EXPECT_TRUE(answered_with_nothing);
  EXPECT_EQ(state_->BeginPush(3, 0, 2, 3).code(), absl::StatusCode::kFailedPrecondition);

  held_.Release();
  state_.reset();  // joins the applier, which finishes step 0 and must not start step 1
  EXPECT_EQ(held_.steps(), std::vector<uint64_t>{0});
}

TEST_F(ShardStateTest, AnswersEachSegmentOnceEveryShareCoversIt) {
  auto created = ShardState::Create(ShardConfig{3, 2, 1}, {10, 20, 30, 40, 50, 60},
                                    OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(created.ok());
  ShardState& state = **created;
  ASSERT_TRUE(state.BeginPush(3, 1, 0, 6).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 0, Bytes({1, 2})).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 2, Bytes({3, 4})).ok());
  bool early = false;
  state.WhenSummed(0, 0, [&](Summed) { early = true; });
  EXPECT_FALSE(early) << "nothing is summed before worker 0 pushed";
  ASSERT_TRUE(state.BeginPush(3, 0, 0, 6).ok());
  ASSERT_TRUE(state.AddSegment(0, 0, 0, Bytes({0.5f, 0.5f, 0.5f})).ok());

  // Every share holds [0, 3) of worker 0 and [0, 4) of worker 1: [0, 3) is summed and final.
  const Summed part = WaitSummed(state, 0, 0);
  ASSERT_NE(part.sum, nullptr) << part.ended;
  ASSERT_EQ(part.end, 3u);
  EXPECT_EQ(std::vector<float>(part.sum->begin(), part.sum->begin() + 3),
            (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_TRUE(early) << "the first waiter is answered as soon as the segment is";
  EXPECT_EQ(state.current_step(), 0u) << "readers see only whole steps";
  PendingRead read(state);
  EXPECT_FALSE(read.answered()) << "answered with a step part-way applied";

  ASSERT_TRUE(state.AddSegment(0, 0, 3, Bytes({0.5f, 0.5f, 0.5f})).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 4, Bytes({5, 6})).ok());  // every share complete
  // The applier may sum [3, 4) (covered once worker 0's second segment is in) before worker
  // 1's last segment arrives: wait until the sum is final to the end, whatever pieces it took.
  Summed rest = WaitSummed(state, 0, 3);
  while (rest.sum != nullptr && rest.end < 6) rest = WaitSummed(state, 0, rest.end);
  ASSERT_NE(rest.sum, nullptr) << rest.ended;
  EXPECT_EQ(rest.end, 6u);
  EXPECT_EQ(*rest.sum, (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
  EXPECT_EQ(WaitApplied(state, 0), *rest.sum);
  const std::vector<float> after_step_0{8.5f, 17.5f, 26.5f, 35.5f, 44.5f, 53.5f};
  EXPECT_EQ(*state.parameters().value(), after_step_0);
  ASSERT_TRUE(read.Wait().ok()) << read.Wait().status();
  EXPECT_EQ(read.Wait()->step, 1u);
  EXPECT_EQ(*read.Wait()->values, after_step_0) << "the waiting read has the whole step";
  // The half-closes come after the step is complete (the next one is being collected).
  EXPECT_TRUE(state.FinishPush(0, 0).ok());
  EXPECT_TRUE(state.FinishPush(1, 0).ok());
  EXPECT_TRUE(state.BeginPush(3, 1, 1, 6).ok());
}

// Three workers push steps in segments of different sizes, interleaved in a different shuffled
// order at every step, every other step last part first (descending, --bucket_bytes); the sums
// and the parameters (Adam: state as well as parameters) must be exactly the bits of one process
// summing whole shares in rank order and stepping whole.
// Random shares of `workers` workers and their sum in rank order, the reference bits. Magnitudes
// 1e7 apart: any other summation order changes the bits.
std::pair<std::vector<std::vector<float>>, std::vector<float>> RandomShares(std::mt19937& random,
                                                                            int workers,
                                                                            uint64_t range) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<std::vector<float>> shares(workers, std::vector<float>(range));
  for (int w = 0; w < workers; ++w) {
    for (float& value : shares[w]) value = unit(random) * (w == 1 ? 1.0f : 1e7f);
  }
  std::vector<float> sum = shares[0];
  for (int w = 1; w < workers; ++w) {
    for (uint64_t i = 0; i < range; ++i) sum[i] += shares[w][i];
  }
  return {shares, sum};
}

// A shard over `range` random parameters with Adam, and the whole-range reference beside it: an
// optimiser over the same range and the parameters it expects.
struct ReferenceRun {
  std::unique_ptr<ShardState> state;  // null if it could not be created
  Optimizer reference;
  std::vector<float> expected;

  static ReferenceRun Start(std::mt19937& random, const ShardConfig& config, uint64_t range) {
    const OptimizerConfig adam{OptimizerKind::kAdam, 0.01f};
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<float> initial(range);
    for (float& value : initial) value = unit(random);
    auto created = ShardState::Create(config, initial, adam);
    return {created.ok() ? *std::move(created) : nullptr, Optimizer::Create(adam, range).value(),
            initial};
  }

  // The next step's random shares of `workers` workers and their sum (RandomShares); the
  // reference takes the step.
  std::pair<std::vector<std::vector<float>>, std::vector<float>> NextShares(std::mt19937& random,
                                                                            int workers) {
    auto shares = RandomShares(random, workers, expected.size());
    EXPECT_TRUE(reference.Step(absl::MakeSpan(expected), shares.second).ok());
    return shares;
  }
};

// Every worker finishes its push of `step`; the step's answered sum and the parameters after it
// must be the reference's bits.
void FinishAndCheckBits(ShardState& state, int workers, uint64_t step,
                        const std::vector<float>& sum, const std::vector<float>& expected) {
  for (int w = 0; w < workers; ++w) ASSERT_TRUE(state.FinishPush(w, step).ok());
  const std::vector<float> answered = WaitApplied(state, step);
  ASSERT_EQ(answered.size(), sum.size());
  EXPECT_EQ(std::memcmp(answered.data(), sum.data(), sum.size() * sizeof(float)), 0)
      << "step " << step << "'s sum";
  EXPECT_EQ(
      std::memcmp(state.parameters().value()->data(), expected.data(), sum.size() * sizeof(float)),
      0)
      << "parameters after step " << step;
}

// Every worker begins its push of `step`, in order or last part first.
void BeginEveryPush(ShardState& state, int workers, uint64_t step, bool descending) {
  for (int w = 0; w < workers; ++w) {
    ASSERT_TRUE(
        state.BeginPush(1, w, step, state.range_elements(), WireDtype::kFp32, descending).ok());
  }
}

// Worker `worker`'s next segment of at most `size` elements of `share` after the `sent` it
// pushed (from the range's end when descending): the shard's answer, and its length in `count`.
absl::Status PushNextSegment(ShardState& state, int worker, uint64_t step,
                             const std::vector<float>& share, uint64_t size, bool descending,
                             uint64_t sent, uint64_t& count) {
  const uint64_t range = share.size();
  count = std::min(size, range - sent);
  const uint64_t offset = descending ? range - sent - count : sent;
  const std::vector<float> piece(share.begin() + offset, share.begin() + offset + count);
  return state.AddSegment(worker, step, offset, Bytes(piece));
}

TEST(ShardStateStreamingTest, InterleavedSegmentsGiveTheWholeRangeReferenceBits) {
  constexpr int kWorkers = 3;
  constexpr uint64_t kRange = 97;
  constexpr int kSteps = 6;
  std::mt19937 random(12345);
  ReferenceRun run = ReferenceRun::Start(random, ShardConfig{1, kWorkers, 0}, kRange);
  ASSERT_NE(run.state, nullptr);
  ShardState& state = *run.state;

  for (uint64_t step = 0; step < kSteps; ++step) {
    const auto [shares, sum] = run.NextShares(random, kWorkers);

    // Worker w cuts its share in segments of 1 + (w + step) % 4 * 9 elements; the segments of
    // all workers are pushed in a random order that keeps each worker's own sequence.
    std::vector<uint64_t> sent(kWorkers, 0);
    std::vector<int> order;
    const bool descending = step % 2 == 1;
    ASSERT_NO_FATAL_FAILURE(BeginEveryPush(state, kWorkers, step, descending));
    for (int w = 0; w < kWorkers; ++w) {
      const uint64_t size = 1 + (w + step) % 4 * 9;
      for (uint64_t n = 0; n < (kRange + size - 1) / size; ++n) order.push_back(w);
    }
    std::shuffle(order.begin(), order.end(), random);
    for (int w : order) {
      uint64_t count = 0;
      ASSERT_TRUE(PushNextSegment(state, w, step, shares[w], 1 + (w + step) % 4 * 9, descending,
                                  sent[w], count)
                      .ok());
      sent[w] += count;
    }
    ASSERT_NO_FATAL_FAILURE(FinishAndCheckBits(state, kWorkers, step, sum, run.expected));
  }
}

// A shard holds at most held_share_elements of each share unsummed: with 30 for a range of 97,
// segments of 1 to 28 elements, each worker pushing as far as that lets it before the applier
// catches up (so the applier's segments begin and end inside pushed ones), in both push orders,
// keep the whole-range reference's bits in the sums and parameters.
TEST(ShardStateStreamingTest, AHeldLimitSmallerThanTheRangeKeepsTheReferenceBits) {
  constexpr int kWorkers = 3;
  constexpr uint64_t kRange = 97;
  constexpr uint64_t kHeld = 30;
  constexpr int kSteps = 4;
  std::mt19937 random(2026);
  ReferenceRun run = ReferenceRun::Start(random, ShardConfig{1, kWorkers, 0, kHeld}, kRange);
  ASSERT_NE(run.state, nullptr);
  ShardState& state = *run.state;
  for (uint64_t step = 0; step < kSteps; ++step) {
    const auto [shares, sum] = run.NextShares(random, kWorkers);
    const bool descending = step % 2 == 1;
    std::vector<uint64_t> sent(kWorkers, 0);
    ASSERT_NO_FATAL_FAILURE(BeginEveryPush(state, kWorkers, step, descending));
    uint64_t summed = 0;
    while (*std::min_element(sent.begin(), sent.end()) < kRange) {
      for (int w = 0; w < kWorkers; ++w) {  // each as far as the limit lets it
        const uint64_t size = 1 + (w + step) % 4 * 9;
        while (sent[w] < kRange) {
          uint64_t count = 0;
          const absl::Status added =
              PushNextSegment(state, w, step, shares[w], size, descending, sent[w], count);
          // Past the limit by what this test saw summed: refused, unless the applier has
          // summed further meanwhile (it never refuses what fits).
          if (!added.ok() && sent[w] + count - summed > kHeld) {
            ASSERT_EQ(added.code(), absl::StatusCode::kResourceExhausted) << added;
            break;
          }
          ASSERT_TRUE(added.ok()) << added;
          sent[w] += count;
        }
      }
      const uint64_t least = *std::min_element(sent.begin(), sent.end());
      if (least == kRange) break;
      const Summed part = WaitSummed(state, step, least - 1);  // the applier catches up
      ASSERT_NE(part.sum, nullptr) << part.ended;
      summed = part.end;
    }
    ASSERT_NO_FATAL_FAILURE(FinishAndCheckBits(state, kWorkers, step, sum, run.expected));
  }
}

// A worker that would hold more of its share unsummed than held_share_elements is refused, and
// nothing changes: here the others have pushed nothing, so nothing can be summed.
TEST(ShardStateStreamingTest, APushBeyondTheHeldLimitIsRefusedAndChangesNothing) {
  auto created = ShardState::Create(ShardConfig{1, 2, 0, /*held_share_elements=*/4},
                                    std::vector<float>(10, 1.0f), OptimizerConfig{});
  ASSERT_TRUE(created.ok());
  ShardState& state = **created;
  ASSERT_TRUE(state.BeginPush(1, 0, 0, 10).ok());
  ASSERT_TRUE(state.AddSegment(0, 0, 0, Bytes({1, 2, 3})).ok());
  const absl::Status refused = state.AddSegment(0, 0, 3, Bytes({4, 5}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("holds 4"), std::string::npos) << refused;
  ASSERT_TRUE(state.AddSegment(0, 0, 3, Bytes({4})).ok()) << "the refused segment took nothing";
  ASSERT_TRUE(state.BeginPush(1, 1, 0, 10).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 0, Bytes({10, 20, 30, 40})).ok());
  ASSERT_NE(WaitSummed(state, 0, 3).sum, nullptr);  // [0, 4) summed: no longer held
  ASSERT_TRUE(state.AddSegment(0, 0, 4, Bytes({5, 6, 7, 8})).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 4, Bytes({50, 60, 70, 80})).ok());
  ASSERT_NE(WaitSummed(state, 0, 7).sum, nullptr);
  ASSERT_TRUE(state.AddSegment(0, 0, 8, Bytes({9, 10})).ok());
  ASSERT_TRUE(state.AddSegment(1, 0, 8, Bytes({90, 100})).ok());
  ASSERT_TRUE(state.FinishPush(0, 0).ok());
  ASSERT_TRUE(state.FinishPush(1, 0).ok());
  EXPECT_EQ(WaitApplied(state, 0), (std::vector<float>{11, 22, 33, 44, 55, 66, 77, 88, 99, 110}));
}

// What a reply takes of a step's sum, as the Step stream's SumWriter does: the elements known past
// the `from` it had (push order: from the range's end when descending), read from the sum's ring
// of slots into out[element]; then tells the state (Answered). The new count.
uint64_t TakeKnown(ShardState& state, int worker, uint64_t step, const Summed& part, uint64_t from,
                   bool descending, std::vector<float>& out) {
  const uint64_t range = out.size();
  const uint64_t begin = descending ? range - part.end : from;
  const uint64_t end = descending ? range - from : part.end;
  ForEachRingRun(begin, end, part.sum->size(), [&](uint64_t element, uint64_t slot, uint64_t n) {
    std::copy_n(part.sum->data() + slot, n, out.data() + element);
  });
  state.Answered(worker, step, part.end);
  return part.end;
}

// The shard keeps only sum_buffer_elements of a step's sum (element i at slot i mod C): with 23
// slots for a range of 97, the applier sums into a slot again once every worker's reply has
// taken it, each worker pushing as far as the sum it was answered lets it (further is refused),
// in both push orders; every worker's reply and the parameters keep the whole-range reference's
// bits.
TEST(ShardStateStreamingTest, ASumRingSmallerThanTheRangeIsSentBeforeItsSlotsAreReused) {
  constexpr int kWorkers = 3;
  constexpr uint64_t kRange = 97;
  constexpr uint64_t kSumSlots = 23;
  constexpr int kSteps = 4;
  std::mt19937 random(77);
  ShardConfig config{1, kWorkers, 0};
  config.sum_buffer_elements = kSumSlots;
  ReferenceRun run = ReferenceRun::Start(random, config, kRange);
  ASSERT_NE(run.state, nullptr);
  ShardState& state = *run.state;
  int refusals = 0;
  for (uint64_t step = 0; step < kSteps; ++step) {
    const auto [shares, sum] = run.NextShares(random, kWorkers);
    const bool descending = step % 2 == 1;
    std::vector<uint64_t> sent(kWorkers, 0), answered(kWorkers, 0);
    std::vector<std::vector<float>> replies(kWorkers, std::vector<float>(kRange, -1.0f));
    ASSERT_NO_FATAL_FAILURE(BeginEveryPush(state, kWorkers, step, descending));
    while (*std::min_element(answered.begin(), answered.end()) < kRange) {
      for (int w = 0; w < kWorkers; ++w) {  // each as far as its answers let it
        const uint64_t size = 1 + (w + step) % 4 * 5;
        while (sent[w] < kRange) {
          uint64_t count = 0;
          const absl::Status added =
              PushNextSegment(state, w, step, shares[w], size, descending, sent[w], count);
          if (sent[w] + count - answered[w] > kSumSlots) {
            ASSERT_EQ(added.code(), absl::StatusCode::kResourceExhausted) << added;
            ++refusals;
            break;
          }
          ASSERT_TRUE(added.ok()) << added;
          sent[w] += count;
        }
      }
      const uint64_t least = *std::min_element(sent.begin(), sent.end());
      for (int w = 0; w < kWorkers; ++w) {  // each reply takes what is summed
        if (answered[w] >= least) continue;
        const Summed part = WaitSummed(state, step, answered[w]);
        ASSERT_NE(part.sum, nullptr) << part.ended;
        answered[w] = TakeKnown(state, w, step, part, answered[w], descending, replies[w]);
      }
    }
    for (int w = 0; w < kWorkers; ++w) {
      ASSERT_TRUE(state.FinishPush(w, step).ok());
      EXPECT_EQ(std::memcmp(replies[w].data(), sum.data(), kRange * sizeof(float)), 0)
          << "worker " << w << "'s reply of step " << step;
    }
    WaitApplied(state, step);
    EXPECT_EQ(std::memcmp(state.parameters().value()->data(), run.expected.data(),
                          kRange * sizeof(float)),
              0)
        << "parameters after step " << step;
  }
  EXPECT_GT(refusals, 0) << "no push ran into the sum's buffer: the test checks nothing";
}

// A push that would run further ahead of the sum its worker was answered than the sum's buffer
// is refused and changes nothing.
TEST(ShardStateStreamingTest, APushFurtherAheadOfItsAnswersThanTheSumsBufferIsRefused) {
  ShardConfig config{1, 1, 0};
  config.sum_buffer_elements = 4;
  auto created = ShardState::Create(config, std::vector<float>(10, 1.0f), OptimizerConfig{});
  ASSERT_TRUE(created.ok());
  ShardState& state = **created;
  ASSERT_TRUE(state.BeginPush(1, 0, 0, 10).ok());
  ASSERT_TRUE(state.AddSegment(0, 0, 0, Bytes({1, 2, 3})).ok());
  const absl::Status refused = state.AddSegment(0, 0, 3, Bytes({4, 5}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("keeps 4"), std::string::npos) << refused;
  std::vector<float> reply(10, 0.0f);
  const Summed part = WaitSummed(state, 0, 2);
  ASSERT_NE(part.sum, nullptr) << part.ended;
  ASSERT_EQ(TakeKnown(state, 0, 0, part, 0, false, reply), 3u)
      << "the refused segment took nothing";
  ASSERT_TRUE(state.AddSegment(0, 0, 3, Bytes({4, 5, 6, 7})).ok());
  EXPECT_EQ(state.AddSegment(0, 0, 7, Bytes({8})).code(), absl::StatusCode::kResourceExhausted);
  const Summed rest = WaitSummed(state, 0, 6);
  ASSERT_NE(rest.sum, nullptr) << rest.ended;
  ASSERT_EQ(TakeKnown(state, 0, 0, rest, 3, false, reply), 7u);
  ASSERT_TRUE(state.AddSegment(0, 0, 7, Bytes({8, 9, 10})).ok());
  ASSERT_TRUE(state.FinishPush(0, 0).ok());
  const Summed last = WaitSummed(state, 0, 9);
  ASSERT_NE(last.sum, nullptr) << last.ended;
  TakeKnown(state, 0, 0, last, 7, false, reply);
  EXPECT_EQ(reply, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

// A step pushed last part first (--bucket_bytes) is summed and answered from the range's end:
// WhenSummed counts from there. Its segments must each end where the last began; a push in the
// other order within the step is refused.
TEST_F(ShardStateTest, ADescendingStepIsSummedAndAnsweredFromTheRangesEnd) {
  auto created = ShardState::Create(ShardConfig{3, 2, 1}, {10, 20, 30, 40, 50, 60},
                                    OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(created.ok());
  ShardState& state = **created;
  ASSERT_TRUE(state.BeginPush(3, 1, 0, 6, WireDtype::kFp32, /*descending=*/true).ok());
  EXPECT_EQ(state.BeginPush(3, 0, 0, 6, WireDtype::kFp32, /*descending=*/false).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(state.AddSegment(1, 0, 4, Bytes({5, 6})).ok());
  EXPECT_EQ(state.AddSegment(1, 0, 0, Bytes({1, 2})).code(), absl::StatusCode::kInvalidArgument)
      << "a segment that does not end where the last began";
  ASSERT_TRUE(state.AddSegment(1, 0, 2, Bytes({3, 4})).ok());
  ASSERT_TRUE(state.BeginPush(3, 0, 0, 6, WireDtype::kFp32, /*descending=*/true).ok());
  ASSERT_TRUE(state.AddSegment(0, 0, 3, Bytes({0.5f, 0.5f, 0.5f})).ok());
  // Worker 0 holds the last 3, worker 1 the last 4: the last 3 are final.
  const Summed part = WaitSummed(state, 0, 0);
  ASSERT_NE(part.sum, nullptr) << part.ended;
  ASSERT_EQ(part.end, 3u);
  EXPECT_EQ(std::vector<float>(part.sum->begin() + 3, part.sum->end()),
            (std::vector<float>{4.5f, 5.5f, 6.5f}));
  ASSERT_TRUE(state.AddSegment(1, 0, 0, Bytes({1, 2})).ok());
  ASSERT_TRUE(state.AddSegment(0, 0, 0, Bytes({0.5f, 0.5f, 0.5f})).ok());
  EXPECT_EQ(WaitApplied(state, 0), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
  EXPECT_EQ(*state.parameters().value(),
            (std::vector<float>{8.5f, 17.5f, 26.5f, 35.5f, 44.5f, 53.5f}));
}

TEST_F(ShardStateTest, AWorkerLostAfterPartOfTheStepWasSummedLosesTheStepHere) {
  ASSERT_TRUE(state_->BeginPush(3, 0, 0, 3).ok());
  ASSERT_TRUE(state_->AddSegment(0, 0, 0, Bytes({1, 1, 1})).ok());  // worker 0's whole share
  ASSERT_TRUE(state_->BeginPush(3, 1, 0, 3).ok());
  ASSERT_TRUE(state_->AddSegment(1, 0, 0, Bytes({2})).ok());  // [0, 1) of every share: summed
  const Summed part = WaitSummed(*state_, 0, 0);
  ASSERT_NE(part.sum, nullptr) << part.ended;
  EXPECT_EQ(part.end, 1u);
  EXPECT_EQ((*part.sum)[0], 3.0f);

  Summed waiting;
  bool answered = false;
  state_->WhenSummed(0, 1, [&](Summed summed) {
    waiting = std::move(summed);
    answered = true;
  });
  PendingRead read(*state_);
  EXPECT_FALSE(read.answered()) << "answered with the step part-way applied";
  state_->AbandonPush(1, 0);  // worker 1's stream broke mid-step
  ASSERT_TRUE(answered) << "a stream waiting on the lost step is answered at once";
  EXPECT_EQ(waiting.sum, nullptr);
  EXPECT_EQ(waiting.ended.code(), absl::StatusCode::kAborted) << waiting.ended;
  ASSERT_TRUE(read.answered()) << "a waiting read is answered at once";
  EXPECT_EQ(read.Wait().status().code(), absl::StatusCode::kAborted) << read.Wait().status();
  EXPECT_EQ(WaitApplied(*state_, 0), std::vector<float>{}) << "the lost step is never applied";

  // Nothing of it is published, the range (part-way through it) is not served, and it cannot be
  // completed.
  EXPECT_EQ(state_->current_step(), 0u);
  EXPECT_EQ(state_->parameters().status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(state_->BeginPush(3, 1, 0, 3).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(state_->FinishPush(0, 0).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(state_->BeginPush(3, 0, 1, 3).code(), absl::StatusCode::kFailedPrecondition);
}

// A read between steps is answered at once, with a copy that later steps leave alone.
TEST_F(ShardStateTest, AReadBetweenStepsIsACopyLaterStepsLeaveAlone) {
  PendingRead read(*state_);
  ASSERT_TRUE(read.answered()) << "no step is part-way: nothing to wait for";
  ASSERT_TRUE(Push(0, 0, {1, 1, 1}).ok());
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  EXPECT_EQ(WaitApplied(*state_, 0), (std::vector<float>{2, 2, 2}));
  ASSERT_TRUE(read.Wait().ok()) << read.Wait().status();
  EXPECT_EQ(read.Wait()->step, 0u);
  EXPECT_EQ(*read.Wait()->values, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{8, 18, 28}));
}

// ReadInPlace's answer now (a read between steps is answered at once).
ShardState::Read ReadNow(ShardState& state) {
  absl::StatusOr<ShardState::Read> answer = absl::UnknownError("not answered");
  state.ReadInPlace([&](absl::StatusOr<ShardState::Read> read) { answer = std::move(read); });
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? *answer : nullptr;
}

std::vector<float> Take(ShardState::ParameterRead& read, uint64_t offset, uint64_t count) {
  std::vector<float> out(count);
  const absl::Status status = read.CopyTo(offset, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

// A read copies nothing up front: what it has not taken when the next step overwrites it is saved
// for it first, so it streams the step it began at; two steps on, it still does.
TEST_F(ShardStateTest, AReadInPlaceKeepsItsStepWhileLaterStepsAreApplied) {
  ShardState::Read read = ReadNow(*state_);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->step(), 0u);
  EXPECT_EQ(Take(*read, 0, 1), (std::vector<float>{10}));
  for (uint64_t step = 0; step < 2; ++step) {
    ASSERT_TRUE(Push(0, step, {1, 1, 1}).ok());
    ASSERT_TRUE(Push(1, step, {1, 1, 1}).ok());
    WaitApplied(*state_, step);
  }
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{6, 16, 26}));
  EXPECT_EQ(Take(*read, 1, 2), (std::vector<float>{20, 30}));
  std::vector<float> again(1);
  EXPECT_EQ(read->CopyTo(0, absl::MakeSpan(again)).code(), absl::StatusCode::kInvalidArgument)
      << "front to back only";
  ShardState::Read later = ReadNow(*state_);
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(later->step(), 2u);
  EXPECT_EQ(Take(*later, 0, 3), (std::vector<float>{6, 16, 26}));
}

// A read that falls behind a step over more than kMaxReadSavedBytes of the range is aborted (the
// reader reads again) rather than saving a copy of the range; the shard goes on.
TEST(ShardStateReadTest, AReadFallenBehindPastItsBudgetIsAbortedNotCopied) {
  const uint64_t range = ShardState::ParameterRead::kMaxReadSavedBytes / sizeof(float) + 100;
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  auto state =
      ShardState::Create(ShardConfig{1, 1, 0, range, range}, std::vector<float>(range, 1.0f), sgd);
  ASSERT_TRUE(state.ok()) << state.status();
  ShardState::Read read = ReadNow(**state);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(Take(*read, 0, 50), std::vector<float>(50, 1.0f));
  const std::vector<float> share(range, 0.5f);
  ASSERT_TRUE((*state)->BeginPush(1, 0, 0, range).ok());
  ASSERT_TRUE((*state)->AddSegment(0, 0, 0, Bytes(share)).ok());
  ASSERT_TRUE((*state)->FinishPush(0, 0).ok());
  WaitApplied(**state, 0);
  std::vector<float> rest(range - 50);
  const absl::Status status = read->CopyTo(50, absl::MakeSpan(rest));
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_NE(status.message().find("read again"), absl::string_view::npos) << status;
  EXPECT_EQ((*state)->current_step(), 1u);
}

// A read that outlives its state is aborted, never left reading freed parameters.
TEST(ShardStateReadTest, AReadOutlivingItsStateIsAborted) {
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  auto state = ShardState::Create(ShardConfig{4, 1, 2}, {1, 2, 3}, sgd);
  ASSERT_TRUE(state.ok()) << state.status();
  ShardState::Read read = ReadNow(**state);
  ASSERT_NE(read, nullptr);
  state->reset();
  std::vector<float> out(3);
  const absl::Status status = read->CopyTo(0, absl::MakeSpan(out));
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_NE(status.message().find("ended during the read"), absl::string_view::npos) << status;
}

// The shard keeps one sum of its range: a step is summed into the last step's buffer once no
// reply holds that any more, and into a buffer of its own while one does (whose values it never
// touches). A waiter for the last step, once every worker began the next, is told it is gone.
TEST_F(ShardStateTest, ASumHeldByAReplyIsKeptAndAReleasedOneIsReused) {
  ASSERT_TRUE(Push(0, 0, {1, 2, 3}).ok());
  ASSERT_TRUE(Push(1, 0, {1, 1, 1}).ok());
  Values step_0 = WaitAppliedSum(*state_, 0);  // a reply still streaming it
  ASSERT_NE(step_0, nullptr);
  ASSERT_TRUE(Push(0, 1, {5, 5, 5}).ok());
  ASSERT_TRUE(Push(1, 1, {5, 5, 5}).ok());
  Values step_1 = WaitAppliedSum(*state_, 1);
  ASSERT_NE(step_1, nullptr);
  EXPECT_NE(step_1->data(), step_0->data()) << "step 1 summed into a buffer a reply holds";
  EXPECT_EQ(*step_0, (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(*step_1, (std::vector<float>{10, 10, 10}));

  const float* const step_1_buffer = step_1->data();
  step_0.reset();
  step_1.reset();  // the replies are done: only the state keeps step 1's sum
  HeldApply held_step_2(2);
  PsTestHooks::SetApplyHook(*state_, held_step_2.Hook());
  ASSERT_TRUE(Push(0, 2, {1, 1, 1}).ok());
  ASSERT_TRUE(Push(1, 2, {2, 2, 2}).ok());
  held_step_2.WaitUntilApplying();  // every worker began step 2: step 1's buffer taken
  const Summed late = WaitSummed(*state_, 1, 0);
  EXPECT_EQ(late.sum, nullptr);
  EXPECT_EQ(late.ended.code(), absl::StatusCode::kFailedPrecondition) << late.ended;
  held_step_2.Release();
  const Values step_2 = WaitAppliedSum(*state_, 2);
  ASSERT_NE(step_2, nullptr);
  EXPECT_EQ(step_2->data(), step_1_buffer) << "a sum nobody held was not reused";
  EXPECT_EQ(*step_2, (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(*state_->parameters().value(), (std::vector<float>{10 - 15, 20 - 16, 30 - 17}));
}

TEST_F(ShardStateTest, AShareCompleteBeforeItsStreamBrokeStillCounts) {
  ASSERT_TRUE(state_->BeginPush(3, 0, 0, 3).ok());
  ASSERT_TRUE(state_->AddSegment(0, 0, 0, Bytes({1, 1, 1})).ok());
  state_->AbandonPush(0, 0);  // cancelled before its half-close: every element arrived
  EXPECT_EQ(state_->BeginPush(3, 0, 0, 3).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(Push(1, 0, {2, 2, 2}).ok());
  EXPECT_EQ(WaitApplied(*state_, 0), (std::vector<float>{3, 3, 3}));
}

// A WhenApplied callback may hold the last reference to the state: the destructor then runs on
// the applier thread, which cannot join itself.
TEST(ShardStateLifetimeTest, TheLastReferenceMayBeDroppedByACallbackOnTheApplierThread) {
  // Notifies when the state's hook, owned by the state, is gone.
  struct NotifyOnDestruction {
    explicit NotifyOnDestruction(absl::Notification* notification) : destroyed(notification) {}
    ~NotifyOnDestruction() { destroyed->Notify(); }
    absl::Notification* destroyed;
  };
  struct RecordDestruction {
    explicit RecordDestruction(std::thread::id* thread) : where(thread) {}
    ~RecordDestruction() { *where = std::this_thread::get_id(); }
    std::thread::id* where;
  };
  absl::Notification destroyed;
  std::thread::id destroyed_on;
  HeldApply held;
  auto created =
      ShardState::Create(ShardConfig{1, 1, 0}, {1}, OptimizerConfig{OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(created.ok());
  std::shared_ptr<ShardState> state = *std::move(created);

  PsTestHooks::SetApplyHook(
      *state, [hold = held.Hook(), tracker = std::make_shared<NotifyOnDestruction>(&destroyed)](
                  uint64_t step, uint64_t begin, uint64_t end) { hold(step, begin, end); });
  state->WhenApplied(
      0, [state, record = std::make_shared<RecordDestruction>(&destroyed_on)](Values) {});
  ASSERT_TRUE(state->BeginPush(1, 0, 0, 1).ok());
  ASSERT_TRUE(state->AddSegment(0, 0, 0, Bytes({1})).ok());
  ASSERT_TRUE(state->FinishPush(0, 0).ok());
  held.WaitUntilApplying();
  state.reset();  // the callback's copy is the last reference now
  held.Release();
  destroyed.WaitForNotification();
  EXPECT_NE(destroyed_on, std::thread::id());
  EXPECT_NE(destroyed_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace ringside::server
