// Shard, one per generation whatever its consistency, in memory: the job's settings choose the
// policy (synchronous steps, or push-pull for staleness, async and backup workers), the identity
// and push checks are the policy's, a Load resumes at its step, a read of the parameters says the
// step it is of in either mode, and Close ends what waits.
#include "server/ps/shard.h"

#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/training_options.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

constexpr absl::Duration kDeadline = absl::Seconds(30);  // a hang fails, no result depends on it
const OptimizerConfig kSgd{OptimizerKind::kSgd, 1.0f};

ShardSpec Spec(int64_t staleness, int64_t backup_workers) {
  return ShardSpec{/*generation=*/3, /*workers=*/2, /*shard=*/1, kSgd,
                   staleness,        backup_workers};
}

// The read's step and values, copied in two pieces.
struct Copied {
  uint64_t step = 0;
  std::vector<float> values;
};
Copied ReadAll(const Shard& shard) {
  absl::Notification done;
  Copied copied;
  shard.ReadParameters([&](absl::StatusOr<Shard::ParametersRead> read) {
    ASSERT_TRUE(read.ok()) << read.status();
    copied.step = read->step;
    copied.values.resize(read->size);
    const uint64_t half = read->size / 2;
    ASSERT_TRUE(read->copy(0, absl::MakeSpan(copied.values).first(half)).ok());
    ASSERT_TRUE(read->copy(half, absl::MakeSpan(copied.values).subspan(half)).ok());
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kDeadline));
  return copied;
}

TEST(ShardTest, TheJobsSettingsChooseThePolicy) {
  struct Case {
    int64_t staleness;
    int64_t backup_workers;
    bool push_pull;
  };
  for (const Case& c :
       {Case{0, 0, false}, Case{1, 0, true}, Case{kAsyncStaleness, 0, true}, Case{0, 1, true}}) {
    auto shard = Shard::Start(Spec(c.staleness, c.backup_workers), {1, 2, 3, 4}, {});
    ASSERT_TRUE(shard.ok()) << shard.status();
    EXPECT_EQ((*shard)->push_pull() != nullptr, c.push_pull) << c.staleness << c.backup_workers;
    EXPECT_EQ((*shard)->steps() != nullptr, !c.push_pull);
    const ShardIdentity& identity = (*shard)->identity();
    EXPECT_EQ(identity.generation, 3u);
    EXPECT_EQ(identity.workers, 2);
    EXPECT_EQ(identity.shard, 1);
    EXPECT_EQ(identity.range_elements, 4u);
    EXPECT_EQ((*shard)->check().Header(2, 0, 4).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ((*shard)->step(), 0u);
  }
}

TEST(ShardTest, ASynchronousReadIsOfTheLastWholeStep) {
  auto made = Shard::Start(Spec(0, 0), {10, 20, 30, 40}, {});
  ASSERT_TRUE(made.ok()) << made.status();
  Shard& shard = **made;
  ShardState& steps = *shard.steps();
  for (int worker = 0; worker < 2; ++worker) {
    ASSERT_TRUE(steps.BeginPush(3, worker, 0, 4).ok());
    const std::vector<float> share = {1, 2, 3, 4};
    ASSERT_TRUE(steps
                    .AddSegment(worker, 0, 0,
                                absl::string_view(reinterpret_cast<const char*>(share.data()),
                                                  share.size() * sizeof(float)))
                    .ok());
    ASSERT_TRUE(steps.FinishPush(worker, 0).ok());
  }
  absl::Notification applied;
  steps.WhenApplied(0, [&](Values) { applied.Notify(); });
  ASSERT_TRUE(applied.WaitForNotificationWithTimeout(kDeadline));
  const Copied read = ReadAll(shard);
  EXPECT_EQ(read.step, 1u);
  EXPECT_EQ(read.values, (std::vector<float>{8, 16, 24, 32}));  // minus the sum, at rate 1
  EXPECT_EQ(shard.step(), 1u);
}

TEST(ShardTest, APushPullReadIsOfTheSlowestWorkersCompletedSteps) {
  Optimizer loaded = Optimizer::Create(kSgd, 2).value();
  std::vector<float> state = loaded.ExportState();  // [steps, ...]
  state[0] = 5;
  ASSERT_TRUE(loaded.ImportState(state).ok());
  EXPECT_EQ(Shard::Resume(Spec(1, 0), /*step=*/4, {1, 2}, Optimizer(loaded), {}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a state of 5 steps resumed at 4";
  auto made = Shard::Resume(Spec(1, 0), /*step=*/5, {1, 2}, std::move(loaded), {});
  ASSERT_TRUE(made.ok()) << made.status();
  Shard& shard = **made;
  PushPullShard& push_pull = *shard.push_pull();
  EXPECT_EQ(push_pull.completed(0), 5u) << "a Load resumes at its step";
  ASSERT_TRUE(push_pull.Push(0, 5, 0, {0.5f, 0.5f}).ok());
  ASSERT_TRUE(push_pull.AwaitSettled(1, kDeadline).ok());
  Copied read = ReadAll(shard);
  EXPECT_EQ(read.step, 5u) << "worker 1 has completed 5 steps";
  // Staleness: the share times 2 workers at rate 1 / 2.
  EXPECT_EQ(read.values, (std::vector<float>{0.5f, 1.5f}));
  ASSERT_TRUE(push_pull.Push(1, 5, 0, {0.5f, 0.5f}).ok());
  ASSERT_TRUE(push_pull.AwaitSettled(2, kDeadline).ok());
  read = ReadAll(shard);
  EXPECT_EQ(read.step, 6u);
  EXPECT_EQ(shard.step(), 6u);
}

TEST(ShardTest, CloseEndsWhatWaitsInEitherMode) {
  auto synchronous = Shard::Start(Spec(0, 0), {1, 2}, {});
  ASSERT_TRUE(synchronous.ok());
  absl::Notification summed;
  (*synchronous)->steps()->WhenSummed(0, 0, [&](Summed answer) {
    EXPECT_EQ(answer.sum, nullptr);
    summed.Notify();
  });
  (*synchronous)->Close();
  EXPECT_TRUE(summed.WaitForNotificationWithTimeout(kDeadline));

  auto push_pull = Shard::Start(Spec(1, 0), {1, 2}, {});
  ASSERT_TRUE(push_pull.ok());
  absl::Notification pulled;
  // Worker 0 may not start step 2 before worker 1 has completed a step: the pull waits.
  (*push_pull)->push_pull()->WhenMayStart(0, 2, [&](absl::StatusOr<PushPullRead> read) {
    EXPECT_EQ(read.status().code(), absl::StatusCode::kAborted);
    pulled.Notify();
  });
  EXPECT_FALSE(pulled.HasBeenNotified());
  (*push_pull)->Close();
  EXPECT_TRUE(pulled.WaitForNotificationWithTimeout(kDeadline));
}

TEST(ShardTest, AConfigurationNoPolicyServesIsRefused) {
  // Backup workers with staleness: neither push-pull policy takes it.
  const absl::StatusOr<std::shared_ptr<Shard>> shard = Shard::Start(Spec(1, 1), {1, 2}, {});
  EXPECT_EQ(shard.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::server
