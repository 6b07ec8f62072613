// The test evaluator on its own: snapshots evaluated exactly as one direct evaluation, points
// timed from the first step, a waiting evaluation replaced by a newer one, ps reads retried
// while the shards straddle a step and labelled with the step they held, failures counted.
// Readers stand in for the shards; they block on notifications, never on clocks.
#include "train/test_evaluator.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "train/device.h"

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

TEST_F(TestEvaluatorTest, AWaitingEvaluationIsReplacedByANewerOne) {
  auto evaluator = Make();
  absl::Notification reading, release;
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 30; ++step) Ended(*evaluator, step, 1);
  evaluator->SubmitShardRead(10, [&]() -> absl::StatusOr<ShardParameters> {
    reading.Notify();
    release.WaitForNotification();
    return ShardParameters{10, params};
  });
  reading.WaitForNotification();  // the evaluator is busy with step 10
  evaluator->SubmitSnapshot(20, params);
  evaluator->SubmitSnapshot(30, params);  // replaces 20, which never started
  release.Notify();
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].step, 10);
  EXPECT_EQ(points[1].step, 30);
  EXPECT_EQ(evaluator->dropped(), 1);
}

TEST_F(TestEvaluatorTest, AShardReadThatStraddlesAStepIsReadAgainAndTakesTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  std::atomic<int> reads{0};
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  evaluator->SubmitShardRead(5, [&]() -> absl::StatusOr<ShardParameters> {
    if (++reads < 3) return absl::AbortedError("ps-0 held step 5, ps-1 step 6");
    return ShardParameters{6, params};
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
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<ShardParameters> {
    read.Notify();
    return ShardParameters{2, params};  // the shards applied step 2 before worker-0 finished it
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
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<ShardParameters> {
    ++reads;
    return absl::UnavailableError("ps-1 is gone");
  });
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 1) << "only a straddled read is read again";
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<ShardParameters> {
    ++reads;
    return absl::AbortedError("straddling");
  });
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 5) << "1 + read_attempts";
  // The shards held a step this worker never reported (its step failed): no point.
  evaluator->SubmitShardRead(1, [&]() -> absl::StatusOr<ShardParameters> {
    return ShardParameters{9, params};
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
