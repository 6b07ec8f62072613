// The test evaluator on its own: snapshots evaluated exactly as one direct evaluation, points
// timed from the first step, snapshots waiting in order (the newest making way when the room is
// full), ps reads done at once
// (not behind an evaluation), retried while the shards straddle a step and labelled with the step
// they held, failures counted. Readers stand in for the shards; readers and the sink block on
// notifications, never on clocks.
#include "worker/test_evaluator.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

class TestEvaluatorTest : public ::testing::Test {
 protected:
  TestEvaluatorTest()
      : spec_(*ModelSpec::Parse("6,12,4", "tanh")),
        test_(MakeSyntheticDataset(300, 6, 4, 3)),
        origin_(absl::FromUnixSeconds(1000)) {}

  std::unique_ptr<TestEvaluator> Make(TestEvaluator::Options options = {}) {
    auto evaluator = TestEvaluator::Create(
        spec_, test_, "cpu",
        [this](const EvaluationLine& point) {
          if (hold_first_point_) {
            hold_first_point_ = false;
            in_sink_.Notify();
            release_sink_.WaitForNotification();
          }
          absl::MutexLock lock(&mu_);
          points_.push_back(point);
        },
        options);
    EXPECT_TRUE(evaluator.ok()) << evaluator.status();
    return evaluator.ok() ? *std::move(evaluator) : nullptr;
  }
  // Step `completed` ran for one second, ending `completed` seconds after the origin.
  void Ended(TestEvaluator& evaluator, int64_t completed, double loss) {
    evaluator.StepEnded(completed, origin_ + absl::Seconds(completed - 1),
                        origin_ + absl::Seconds(completed), loss);
  }
  Evaluation Direct(const std::vector<float>& params) {
    auto computer = MakeGradientComputer("cpu", spec_);
    return *(*computer)->Evaluate(params, test_.AllRows(), {});
  }
  std::vector<EvaluationLine> Points() {
    absl::MutexLock lock(&mu_);
    return points_;
  }

  const ModelSpec spec_;
  const Dataset test_;
  const absl::Time origin_;
  absl::Mutex mu_;
  std::vector<EvaluationLine> points_ ABSL_GUARDED_BY(mu_);
  // Set before the first submission: the sink holds the compute thread at the first point until
  // release_sink_, so the test knows the evaluator is busy.
  bool hold_first_point_ = false;  // the compute thread's once submitted
  absl::Notification in_sink_, release_sink_;
};

TEST_F(TestEvaluatorTest, ASnapshotIsEvaluatedOnTheWholeTestSetAndTimedFromTheFirstStep) {
  auto evaluator = Make();
  const std::vector<float> initial = InitialParameters(spec_, 1);
  const std::vector<float> later = InitialParameters(spec_, 2);
  evaluator->SubmitSnapshot(0, initial);
  evaluator->Drain();
  for (int64_t step = 1; step <= 3; ++step) Ended(*evaluator, step, 0.5 * step);
  evaluator->SubmitSnapshot(3, later);
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].step, 0);
  EXPECT_EQ(points[0].seconds, 0);
  EXPECT_EQ(points[0].loss, 0);
  EXPECT_DOUBLE_EQ(points[0].test_accuracy, Direct(initial).accuracy);
  EXPECT_EQ(points[1].step, 3);
  EXPECT_DOUBLE_EQ(points[1].seconds, 3.0) << "step 3 ended 3 s after step 1 began";
  EXPECT_DOUBLE_EQ(points[1].loss, 1.5);
  EXPECT_DOUBLE_EQ(points[1].test_accuracy, Direct(later).accuracy);
  EXPECT_NEAR(points[1].test_loss, Direct(later).mean_loss, 1e-6);
  EXPECT_GE(points[1].eval_seconds, 0);
  EXPECT_EQ(evaluator->dropped(), 0);
  EXPECT_EQ(evaluator->failures().count, 0);
}

TEST_F(TestEvaluatorTest, SnapshotsWaitInOrderWhileTheEvaluatorIsBusy) {
  hold_first_point_ = true;
  auto evaluator = Make();  // 64 MiB of a 112-parameter model: room for every one
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 40; ++step) Ended(*evaluator, step, 1);
  evaluator->SubmitSnapshot(10, params);
  in_sink_.WaitForNotification();  // the evaluator is busy with step 10
  for (int64_t step : {20, 30, 40}) evaluator->SubmitSnapshot(step, params);
  release_sink_.Notify();
  evaluator->Drain();
  std::vector<int64_t> steps;
  for (const EvaluationLine& point : Points()) steps.push_back(point.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(evaluator->dropped(), 0);
}

TEST_F(TestEvaluatorTest, WhenTheWaitingRoomIsFullTheNewestWaitingOneMakesWay) {
  hold_first_point_ = true;
  TestEvaluator::Options options;
  options.max_waiting_bytes = 2 * spec_.parameter_count() * sizeof(float);  // two snapshots
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 40; ++step) Ended(*evaluator, step, 1);
  evaluator->SubmitSnapshot(10, params);
  in_sink_.WaitForNotification();
  for (int64_t step : {20, 30, 40}) evaluator->SubmitSnapshot(step, params);  // 40 replaces 30
  release_sink_.Notify();
  evaluator->Drain();
  std::vector<int64_t> steps;
  for (const EvaluationLine& point : Points()) steps.push_back(point.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 40})) << "the first and the last are kept";
  EXPECT_EQ(evaluator->dropped(), 1);
}

// The shards are read when the evaluation is due, not when the evaluator is free again: a read
// waiting behind an evaluation would find the shards steps later.
TEST_F(TestEvaluatorTest, AShardReadIsNotQueuedBehindAnEvaluation) {
  hold_first_point_ = true;
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 30; ++step) Ended(*evaluator, step, 1);
  evaluator->SubmitSnapshot(10, params);
  in_sink_.WaitForNotification();  // the compute thread is held at step 10's point
  absl::Notification read;
  evaluator->SubmitShardRead(20, [&]() -> absl::StatusOr<server::ShardParameters> {
    read.Notify();
    return server::ShardParameters{21, params};
  });
  read.WaitForNotification();  // while the compute thread is still held
  release_sink_.Notify();
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].step, 10);
  EXPECT_EQ(points[1].step, 21);
  EXPECT_DOUBLE_EQ(points[1].seconds, 21.0);
}

TEST_F(TestEvaluatorTest, AShardReadThatStraddlesAStepIsReadAgainAndTakesTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  std::atomic<int> reads{0};
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  evaluator->SubmitShardRead(5, [&]() -> absl::StatusOr<server::ShardParameters> {
    if (++reads < 3) return absl::AbortedError("ps-0 held step 5, ps-1 step 6");
    return server::ShardParameters{6, params};
  });
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(reads.load(), 3);
  EXPECT_EQ(points[0].step, 6) << "the step the shards held when read, not the one submitted";
  EXPECT_DOUBLE_EQ(points[0].seconds, 6.0);
  EXPECT_DOUBLE_EQ(points[0].loss, 0.6);
  EXPECT_DOUBLE_EQ(points[0].test_accuracy, Direct(params).accuracy);
}

TEST_F(TestEvaluatorTest, APsPointWaitsForTheTrainerToReportTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  Ended(*evaluator, 1, 0.25);
  absl::Notification read;
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<server::ShardParameters> {
    read.Notify();
    return server::ShardParameters{
        2, params};  // the shards applied step 2 before worker-0 finished it
  });
  read.WaitForNotification();
  Ended(*evaluator, 2, 0.125);
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].step, 2);
  EXPECT_DOUBLE_EQ(points[0].seconds, 2.0);
  EXPECT_DOUBLE_EQ(points[0].loss, 0.125);
}

TEST_F(TestEvaluatorTest, FailuresAreCountedAndNeverFatal) {
  TestEvaluator::Options options;
  options.read_attempts = 4;
  options.step_report_timeout = absl::ZeroDuration();
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  std::atomic<int> reads{0};
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<server::ShardParameters> {
    ++reads;
    return absl::UnavailableError("ps-1 is gone");
  });
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 1) << "only a straddled read is read again";
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<server::ShardParameters> {
    ++reads;
    return absl::AbortedError("straddling");
  });
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 5) << "1 + read_attempts";
  // The shards held a step this worker never reported (its step failed): no point.
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<server::ShardParameters> {
    return server::ShardParameters{9, params};
  });
  evaluator->Drain();
  const TestEvaluator::Failures failures = evaluator->failures();
  EXPECT_EQ(failures.count, 3);
  EXPECT_EQ(failures.last.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Points().empty());
  evaluator->SubmitSnapshot(0, params);  // and it goes on evaluating
  evaluator->Drain();
  EXPECT_EQ(Points().size(), 1u);
}

TEST_F(TestEvaluatorTest, NoTestSetOrAMismatchedOneIsRefused) {
  const Dataset empty;
  EXPECT_EQ(TestEvaluator::Create(spec_, empty, "cpu", nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const Dataset other = MakeSyntheticDataset(10, 5, 4, 3);
  EXPECT_EQ(TestEvaluator::Create(spec_, other, "cpu", nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
