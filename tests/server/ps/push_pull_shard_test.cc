// A shard under bounded staleness or async (server/ps/push_pull_shard.h), in one process: a
// worker's pull blocks exactly when it is more than s steps ahead of the slowest, and is released
// when the slowest advances (a worker as a thread, the slowest driven by the test); async never
// blocks; each push is one scaled optimiser step; staleness is recorded; every refusal. Nothing
// waits on time: the test waits for the shard's own events (AwaitSettled: updates applied and
// the pulls they released answered) before it asserts that a pull still waits. Backup workers
// (the quorum mode): a step is applied with the first N - b pushes computed on it, a late push is
// dropped and counted, and a worker left behind pulls the latest parameters and skips to their
// step, never holding the others back.
#include "server/ps/push_pull_shard.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"

namespace ringside::server {
namespace {

constexpr absl::Duration kDeadline = absl::Seconds(30);  // a hang fails, no result depends on it

std::unique_ptr<PushPullShard> MakeShard(int workers, int64_t staleness,
                                         PushPullShardMetrics metrics = {},
                                         uint64_t completed = 0) {
  auto created = PushPullShard::Create(PushPullShardConfig{1, workers, 0, staleness, completed},
                                       std::vector<float>{0.0f}, {},
                                       OptimizerConfig{OptimizerKind::kSgd, 1.0f}, metrics);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? std::move(*created) : nullptr;
}

// A pull's answer, delivered to the test's thread.
struct Pull {
  absl::Notification answered;
  absl::StatusOr<PushPullRead> read = absl::UnknownError("unanswered");
};

void Ask(PushPullShard& shard, int worker, uint64_t step, Pull& pull) {
  shard.WhenMayStart(worker, step, [&pull](absl::StatusOr<PushPullRead> read) {
    pull.read = std::move(read);
    pull.answered.Notify();
  });
}

// Worker 0 as a thread: pull step c, push step c, as far as the shard lets it, reporting each
// step it is about to wait for.
class WorkerThread {
 public:
  WorkerThread(PushPullShard& shard, uint64_t steps) : shard_(shard) {
    thread_ = std::thread([this, steps] {
      for (uint64_t step = 0; step < steps; ++step) {
        Pull pull;
        {
          absl::MutexLock lock(&mu_);
          waiting_for_ = step;
        }
        Ask(shard_, 0, step, pull);
        if (!pull.answered.WaitForNotificationWithTimeout(kDeadline) || !pull.read.ok()) return;
        {
          absl::MutexLock lock(&mu_);
          started_ = step + 1;
        }
        if (!shard_.Push(0, step, pull.read->version, {1.0f}).ok()) return;
      }
    });
  }
  ~WorkerThread() { thread_.join(); }

  // Waits until the thread waits for `step`'s pull.
  bool WaitUntilWaitingFor(uint64_t step) {
    absl::MutexLock lock(&mu_);
    const auto reached = [this, step]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiting_for_ >= step; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kDeadline);
  }
  uint64_t started() {
    absl::MutexLock lock(&mu_);
    return started_;
  }

 private:
  PushPullShard& shard_;
  absl::Mutex mu_;
  uint64_t waiting_for_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;  // steps whose pull was answered
  std::thread thread_;
};

TEST(StaleShardTest, AWorkerBlocksExactlyWhenMoreThanStalenessAheadAndIsReleasedByTheSlowest) {
  for (const int64_t staleness : {1, 2, 3}) {
    SCOPED_TRACE(staleness);
    std::unique_ptr<PushPullShard> shard = MakeShard(2, staleness);
    const uint64_t s = static_cast<uint64_t>(staleness);
    WorkerThread fast(*shard, /*steps=*/s + 3);
    // Worker 1 has completed nothing: worker 0 starts steps 0..s and then waits for step s + 1.
    ASSERT_TRUE(fast.WaitUntilWaitingFor(s + 1));
    ASSERT_TRUE(shard->AwaitSettled(s + 1, kDeadline).ok());  // its push of step s is applied
    EXPECT_EQ(fast.started(), s + 1);
    EXPECT_EQ(shard->completed(0), s + 1);
    // The slowest completes one step: worker 0 may run exactly one more.
    ASSERT_TRUE(shard->Push(1, 0, 0, {0.0f}).ok());
    ASSERT_TRUE(fast.WaitUntilWaitingFor(s + 2));
    ASSERT_TRUE(shard->AwaitSettled(s + 3, kDeadline).ok());
    EXPECT_EQ(fast.started(), s + 2);
    ASSERT_TRUE(shard->Push(1, 1, 1, {0.0f}).ok());  // releases the last step
    ASSERT_TRUE(shard->AwaitSettled(s + 5, kDeadline).ok());
    EXPECT_EQ(shard->completed(0), s + 3);
  }
}

TEST(StaleShardTest, APullWaitsForTheWorkersOwnPushes) {
  std::unique_ptr<PushPullShard> shard = MakeShard(1, kAsyncStaleness);
  ASSERT_TRUE(shard->Push(0, 0, 0, {2.0f}).ok());
  Pull pull;
  Ask(*shard, 0, 1, pull);
  ASSERT_TRUE(pull.answered.WaitForNotificationWithTimeout(kDeadline));
  ASSERT_TRUE(pull.read.ok()) << pull.read.status();
  EXPECT_EQ(pull.read->version, 1u);  // computed on parameters with its own step 0 in them
  EXPECT_EQ(*pull.read->values, std::vector<float>{-2.0f});
}

TEST(StaleShardTest, AsyncNeverBlocksAndEachPushIsOneScaledStep) {
  std::unique_ptr<PushPullShard> shard = MakeShard(4, kAsyncStaleness);
  for (uint64_t step = 0; step < 20; ++step) {
    Pull pull;
    Ask(*shard, 2, step, pull);
    ASSERT_TRUE(pull.answered.WaitForNotificationWithTimeout(kDeadline)) << step;
    ASSERT_TRUE(pull.read.ok());
    EXPECT_EQ(pull.read->slowest_completed, 0u);
    // A share of 0.25 from one of 4 workers: scaled by 4, stepped at lr 1/4: -0.25 each.
    ASSERT_TRUE(shard->Push(2, step, pull.read->version, {0.25f}).ok());
  }
  ASSERT_TRUE(shard->AwaitSettled(20, kDeadline).ok());
  EXPECT_EQ(*shard->Read().values, std::vector<float>{-5.0f});
}

TEST(StaleShardTest, EachUpdatesStalenessIsRecorded) {
  prometheus::Histogram histogram({0, 1, 2, 4});
  std::unique_ptr<PushPullShard> shard =
      MakeShard(2, 2, PushPullShardMetrics{&histogram, nullptr, nullptr, {}});
  ASSERT_TRUE(shard->Push(0, 0, 0, {1.0f}).ok());  // applied at version 0: staleness 0
  ASSERT_TRUE(shard->Push(1, 0, 0, {1.0f}).ok());  // read at 0, applied at 1: staleness 1
  ASSERT_TRUE(shard->Push(0, 1, 0, {1.0f}).ok());  // read at 0, applied at 2: staleness 2
  ASSERT_TRUE(shard->AwaitSettled(3, kDeadline).ok());
  const prometheus::ClientMetric metric = histogram.Collect();
  EXPECT_EQ(metric.histogram.sample_count, 3u);
  EXPECT_EQ(metric.histogram.sample_sum, 3.0);
}

TEST(StaleShardTest, RefusesWhatDoesNotFit) {
  std::unique_ptr<PushPullShard> shard = MakeShard(2, 1);
  EXPECT_EQ(shard->Push(2, 0, 0, {1.0f}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shard->Push(-1, 0, 0, {1.0f}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shard->Push(0, 0, 0, {1.0f, 2.0f}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shard->Push(0, 1, 0, {1.0f}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(shard->Push(0, 0, 5, {1.0f}).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(shard->Push(0, 0, 0, {1.0f}).ok());
  EXPECT_EQ(shard->Push(0, 0, 0, {1.0f}).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(PushPullShard::Create(PushPullShardConfig{1, 2, 0, 0, 0}, {0.0f}, {},
                                  OptimizerConfig{OptimizerKind::kSgd, 1.0f})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A push in segments passes the intake every shard shares (received_share.h): each segment is
// checked before anything of it is kept, a refused one leaves the push as it was, an abandoned
// push may be made again, and the share applied is the one a whole push would apply, bit for bit.
std::unique_ptr<PushPullShard> MakeWideShard(PushPullShardMetrics metrics = {}) {
  auto created = PushPullShard::Create(PushPullShardConfig{1, 2, 0, /*staleness=*/1},
                                       std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}, {},
                                       OptimizerConfig{OptimizerKind::kSgd, 0.25f}, metrics);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? std::move(*created) : nullptr;
}

absl::Status AddFloats(PushPullShard& shard, int worker, uint64_t step, uint64_t offset,
                       std::vector<float> values) {
  auto owner = std::make_shared<const std::vector<float>>(std::move(values));
  const absl::string_view bytes(reinterpret_cast<const char*>(owner->data()),
                                owner->size() * sizeof(float));
  return shard.AddSegment(worker, step, offset, {bytes}, owner);
}

TEST(StaleShardTest, APushInSegmentsIsCheckedAsItArrivesAndAppliesWhatAWholePushWould) {
  prometheus::Counter refused;
  PushPullShardMetrics metrics;
  metrics.nonfinite.refused = &refused;
  std::unique_ptr<PushPullShard> shard = MakeWideShard(metrics);
  std::unique_ptr<PushPullShard> whole = MakeWideShard();
  const std::vector<float> gradient = {0.5f, -1.5f, 0.125f, 3.0f};

  EXPECT_EQ(AddFloats(*shard, 0, 0, 0, {0.5f}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(shard->BeginPush(2, 0, 0, 0, 4).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(shard->BeginPush(1, 0, 0, 0, 3).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(shard->BeginPush(1, 0, 0, 0, 4).ok());
  EXPECT_EQ(shard->BeginPush(1, 0, 0, 0, 4).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(AddFloats(*shard, 0, 0, 1, {-1.5f}).code(), absl::StatusCode::kInvalidArgument);
  const char three_bytes[3] = {0, 0, 0};
  EXPECT_EQ(shard->AddSegment(0, 0, 0, {absl::string_view(three_bytes, 3)}, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AddFloats(*shard, 0, 0, 0, {0.5f, std::nanf("")}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.Value(), 1.0);
  EXPECT_EQ(AddFloats(*shard, 0, 0, 0, {0.5f, -1.5f, 0.125f, 3.0f, 9.0f}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(AddFloats(*shard, 0, 0, 0, {0.5f, -1.5f}).ok());
  EXPECT_EQ(shard->FinishPush(0, 0).code(), absl::StatusCode::kInvalidArgument);
  // Abandoned with half of it kept: nothing applied, and the push may be made again.
  shard->AbandonPush(0, 0);
  EXPECT_EQ(AddFloats(*shard, 0, 0, 2, {0.125f, 3.0f}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(shard->Read().version, 0u);
  ASSERT_TRUE(shard->BeginPush(1, 0, 0, 0, 4).ok());
  ASSERT_TRUE(AddFloats(*shard, 0, 0, 0, {0.5f, -1.5f}).ok());
  ASSERT_TRUE(AddFloats(*shard, 0, 0, 2, {}).ok());  // an empty segment continues it
  ASSERT_TRUE(AddFloats(*shard, 0, 0, 2, {0.125f, 3.0f}).ok());
  ASSERT_TRUE(shard->FinishPush(0, 0).ok());
  EXPECT_EQ(shard->BeginPush(1, 0, 0, 0, 4).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(whole->Push(0, 0, 0, gradient).ok());

  ASSERT_TRUE(shard->AwaitSettled(1, kDeadline).ok());
  ASSERT_TRUE(whole->AwaitSettled(1, kDeadline).ok());
  EXPECT_EQ(shard->completed(0), 1u);
  EXPECT_EQ(*shard->Read().values, *whole->Read().values);
  EXPECT_EQ(shard->ExportState(), whole->ExportState());
}

TEST(StaleShardTest, ClosingAnswersWaitingPullsAbortedAndRefusesPushes) {
  std::unique_ptr<PushPullShard> shard = MakeShard(2, 1);
  Pull pull;
  Ask(*shard, 0, 2, pull);  // needs its own steps 0 and 1 first
  shard->Close();
  ASSERT_TRUE(pull.answered.WaitForNotificationWithTimeout(kDeadline));
  EXPECT_EQ(pull.read.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(shard->Push(0, 0, 0, {1.0f}).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(StaleShardTest, ARegroupsCompletedStepsAreEveryonesStart) {
  std::unique_ptr<PushPullShard> shard = MakeShard(2, 1, {}, /*completed=*/40);
  EXPECT_EQ(shard->Push(0, 0, 0, {1.0f}).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(shard->Push(0, 40, 0, {1.0f}).ok());
  Pull pull;
  Ask(*shard, 0, 41, pull);  // one ahead of worker 1's 40: allowed with staleness 1
  ASSERT_TRUE(pull.answered.WaitForNotificationWithTimeout(kDeadline));
  EXPECT_TRUE(pull.read.ok());
}

std::unique_ptr<PushPullShard> MakeQuorumShard(int workers, int64_t backup_workers,
                                               PushPullShardMetrics metrics = {}) {
  auto created = PushPullShard::Create(
      PushPullShardConfig{1, workers, 0, /*staleness=*/0, /*completed_steps=*/0, backup_workers},
      std::vector<float>{0.0f}, {}, OptimizerConfig{OptimizerKind::kSgd, 1.0f}, metrics);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? std::move(*created) : nullptr;
}

// The pull worker `worker` makes after its push, answered.
PushPullRead PullAfterPush(PushPullShard& shard, int worker, uint64_t pushed_step) {
  Pull pull;
  Ask(shard, worker, pushed_step + 1, pull);
  EXPECT_TRUE(pull.answered.WaitForNotificationWithTimeout(kDeadline));
  EXPECT_TRUE(pull.read.ok()) << pull.read.status();
  return pull.read.ok() ? *pull.read : PushPullRead{};
}

TEST(StaleShardQuorumTest, AStepIsAppliedWithTheFirstQuorumAndALatePushIsDroppedAndCounted) {
  prometheus::Counter dropped;
  prometheus::Histogram staleness({0, 1});
  std::unique_ptr<PushPullShard> shard =
      MakeQuorumShard(3, 1, PushPullShardMetrics{&staleness, nullptr, &dropped, {}});
  ASSERT_TRUE(shard->Push(0, 0, 0, {0.5f}).ok());
  ASSERT_TRUE(shard->Push(1, 0, 0, {1.0f}).ok());
  ASSERT_TRUE(shard->AwaitSettled(1, kDeadline).ok());
  // Shares of a global batch: (0.5 + 1) * 3 / 2, the two workers' mean, one step at lr 1.
  EXPECT_EQ(*shard->Read().values, std::vector<float>{-2.25f});
  EXPECT_EQ(PullAfterPush(*shard, 0, 0).version, 1u);
  // Worker 2's push of step 0 comes after the step was applied: dropped, never applied.
  ASSERT_TRUE(shard->Push(2, 0, 0, {100.0f}).ok());
  EXPECT_EQ(dropped.Value(), 1.0);
  const PushPullRead read = PullAfterPush(*shard, 2, 0);  // answered at once, with the latest
  EXPECT_EQ(read.version, 1u);
  EXPECT_EQ(*read.values, std::vector<float>{-2.25f});
  EXPECT_EQ(read.slowest_completed, 1u);                      // the steps applied
  EXPECT_EQ(staleness.Collect().histogram.sample_count, 2u);  // each applied share, stale by 0
  EXPECT_EQ(staleness.Collect().histogram.sample_sum, 0.0);
}

TEST(StaleShardQuorumTest, AWorkerLeftBehindNeverHoldsTheOthersAndSkipsToTheLatestStep) {
  prometheus::Counter dropped;
  std::unique_ptr<PushPullShard> shard =
      MakeQuorumShard(3, 1, PushPullShardMetrics{nullptr, nullptr, &dropped, {}});
  // Workers 0 and 1 train five steps while worker 2 is still computing its step 0.
  for (uint64_t step = 0; step < 5; ++step) {
    ASSERT_TRUE(shard->Push(0, step, step, {1.0f}).ok());
    ASSERT_TRUE(shard->Push(1, step, step, {1.0f}).ok());
    EXPECT_EQ(PullAfterPush(*shard, 0, step).version, step + 1);
    EXPECT_EQ(PullAfterPush(*shard, 1, step).version, step + 1);
  }
  ASSERT_TRUE(shard->Push(2, 0, 0, {1.0f}).ok());
  EXPECT_EQ(dropped.Value(), 1.0);
  // Its next step is the parameters' step 5; its push of it counts.
  EXPECT_EQ(PullAfterPush(*shard, 2, 0).version, 5u);
  ASSERT_TRUE(shard->Push(2, 5, 5, {1.0f}).ok());
  ASSERT_TRUE(shard->Push(0, 5, 5, {1.0f}).ok());
  ASSERT_TRUE(shard->AwaitSettled(6, kDeadline).ok());
  EXPECT_EQ(shard->completed(2), 6u);
  EXPECT_EQ(shard->completed(1), 5u);  // its push of step 5 would come late
  EXPECT_EQ(*shard->Read().values, std::vector<float>{-18.0f});  // six steps of 2 * 3 / 2
  EXPECT_EQ(dropped.Value(), 1.0);
}

TEST(StaleShardQuorumTest, PushesQueuedBehindAFullStepAreDroppedWhateverTheApplierIsDoing) {
  prometheus::Counter dropped;
  std::unique_ptr<PushPullShard> shard =
      MakeQuorumShard(4, 2, PushPullShardMetrics{nullptr, nullptr, &dropped, {}});
  // All four computed on version 0; the first two in order make the step, whether the applier
  // has applied it before the last two arrive (dropped on arrival) or not (dropped when reached).
  for (int worker = 0; worker < 4; ++worker) {
    ASSERT_TRUE(shard->Push(worker, 0, 0, {static_cast<float>(worker + 1)}).ok());
  }
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_EQ(PullAfterPush(*shard, worker, 0).version, 1u);
  ASSERT_TRUE(shard->AwaitSettled(1, kDeadline).ok());
  EXPECT_EQ(*shard->Read().values, std::vector<float>{-(1.0f + 2.0f) * 2.0f});
  // The applier takes pushes in order: once step 1 is applied, the two behind step 0 are gone.
  ASSERT_TRUE(shard->Push(2, 1, 1, {1.0f}).ok());
  ASSERT_TRUE(shard->Push(3, 1, 1, {1.0f}).ok());
  ASSERT_TRUE(shard->AwaitSettled(2, kDeadline).ok());
  EXPECT_EQ(dropped.Value(), 2.0);
  EXPECT_EQ(*shard->Read().values, std::vector<float>{-6.0f - 4.0f});
  EXPECT_EQ(shard->Read().version, 2u);
}

TEST(StaleShardQuorumTest, RefusesStalenessWithBackupWorkersAndAStepPushedTwice) {
  EXPECT_EQ(PushPullShard::Create(PushPullShardConfig{1, 3, 0, /*staleness=*/2, 0, 1}, {0.0f}, {},
                                  OptimizerConfig{OptimizerKind::kSgd, 1.0f})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::unique_ptr<PushPullShard> shard = MakeQuorumShard(3, 1);
  ASSERT_TRUE(shard->Push(0, 3, 0, {1.0f}).ok());  // a worker may skip steps
  EXPECT_EQ(shard->Push(0, 3, 0, {1.0f}).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(shard->Push(1, 0, 7, {1.0f}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::server
