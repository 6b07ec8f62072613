// The test evaluator on its own: snapshots evaluated exactly as one direct evaluation, points
// timed from the first step, snapshots offered while its one copy of the parameters is in use
// waiting on disk in order (within their budget), other offers refused (and nothing copied), ps
// reads retried while the shards straddle a step and labelled
// with the step they held, failures counted. Readers stand in for the shards; readers and the
// sink block on notifications, never on clocks.
#include "worker/test_evaluator.h"

#include <atomic>
#include <filesystem>
#include <iterator>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
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
  // Entries in `dir`.
  static int FilesIn(const std::string& dir) {
    return static_cast<int>(std::distance(std::filesystem::directory_iterator(dir),
                                          std::filesystem::directory_iterator()));
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
  EXPECT_TRUE(evaluator->OfferSnapshot(0, initial));
  evaluator->Drain();
  for (int64_t step = 1; step <= 3; ++step) Ended(*evaluator, step, 0.5 * step);
  EXPECT_TRUE(evaluator->OfferSnapshot(3, later));
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
  EXPECT_EQ(evaluator->deferred(), 0);
  EXPECT_EQ(evaluator->repeated(), 0);
  EXPECT_EQ(evaluator->failures().count, 0);
}

// The evaluator holds one copy of the parameters: while it is being evaluated, every offer is
// refused and the trainer's next offer, once it is free, is taken.
TEST_F(TestEvaluatorTest, OffersWhileTheCopyIsEvaluatedAreRefusedAndTheNextIsTaken) {
  hold_first_point_ = true;
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 40; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params));
  in_sink_.WaitForNotification();  // the compute thread is held at step 10's point
  EXPECT_FALSE(evaluator->OfferSnapshot(20, params));
  bool read = false;
  EXPECT_FALSE(evaluator->OfferShardRead(30, [&](absl::Span<float>) -> absl::StatusOr<uint64_t> {
    read = true;
    return 30;
  }));
  release_sink_.Notify();
  evaluator->Drain();
  EXPECT_TRUE(evaluator->OfferSnapshot(31, params));
  evaluator->Drain();
  std::vector<int64_t> steps;
  for (const EvaluationLine& point : Points()) steps.push_back(point.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 31}));
  EXPECT_FALSE(read) << "a refused read never reads";
  EXPECT_EQ(evaluator->deferred(), 2);
}

// A refused offer copies nothing: the shards' parameters a read put in the copy are the ones
// evaluated, whatever was offered meanwhile.
TEST_F(TestEvaluatorTest, ARefusedSnapshotLeavesTheCopyBeingReadAlone) {
  auto evaluator = Make();
  const std::vector<float> shards = InitialParameters(spec_, 4);
  const std::vector<float> other = InitialParameters(spec_, 5);
  ASSERT_NE(Direct(shards).mean_loss, Direct(other).mean_loss);
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  absl::Notification filled, release;
  ASSERT_TRUE(evaluator->OfferShardRead(5, [&](absl::Span<float> out) -> absl::StatusOr<uint64_t> {
    std::copy(shards.begin(), shards.end(), out.begin());
    filled.Notify();
    release.WaitForNotification();
    return 6;
  }));
  filled.WaitForNotification();
  EXPECT_FALSE(evaluator->OfferSnapshot(6, other));
  release.Notify();
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].step, 6);
  EXPECT_NEAR(points[0].test_loss, Direct(shards).mean_loss, 1e-6);
  EXPECT_EQ(evaluator->deferred(), 1);
}

// Snapshots offered while the copy is evaluated wait on disk, not in memory, and are evaluated in
// order, each exactly; a shard read meanwhile is refused (it must read the shards when due); the
// files are gone once evaluated, and their directory with the evaluator.
TEST_F(TestEvaluatorTest, SnapshotsOfferedWhileBusyWaitOnDiskInOrder) {
  auto dir = launch::TempDir::Create("ringside-evaluator-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  hold_first_point_ = true;
  TestEvaluator::Options options;
  options.spill_prefix = dir->File("waiting-");
  auto evaluator = Make(options);
  std::vector<std::vector<float>> params;
  for (int seed = 1; seed <= 3; ++seed) params.push_back(InitialParameters(spec_, seed));
  for (int64_t step = 1; step <= 30; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params[0]));
  in_sink_.WaitForNotification();  // the compute thread is held at step 10's point
  EXPECT_TRUE(evaluator->OfferSnapshot(20, params[1]));
  EXPECT_TRUE(evaluator->OfferSnapshot(30, params[2]));
  EXPECT_FALSE(evaluator->OfferShardRead(
      30, [](absl::Span<float>) -> absl::StatusOr<uint64_t> { return 30; }));
  EXPECT_EQ(FilesIn(dir->path()), 1) << "one directory of waiting snapshots";
  release_sink_.Notify();
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(points[p].step, 10 * static_cast<int64_t>(p + 1));
    EXPECT_NEAR(points[p].test_loss, Direct(params[p]).mean_loss, 1e-6) << p;
  }
  EXPECT_EQ(evaluator->deferred(), 1) << "the shard read";
  EXPECT_EQ(evaluator->failures().count, 0) << evaluator->failures().last;
  evaluator.reset();
  EXPECT_EQ(FilesIn(dir->path()), 0);
}

// Beyond max_spilled_bytes an offer is refused (counted): the trainer offers again later.
TEST_F(TestEvaluatorTest, SnapshotsBeyondTheDiskBudgetAreRefused) {
  auto dir = launch::TempDir::Create("ringside-evaluator-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  hold_first_point_ = true;
  TestEvaluator::Options options;
  options.spill_prefix = dir->File("waiting-");
  options.max_spilled_bytes = spec_.parameter_count() * sizeof(float);  // one snapshot
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 30; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params));
  in_sink_.WaitForNotification();
  EXPECT_TRUE(evaluator->OfferSnapshot(20, params));
  EXPECT_FALSE(evaluator->OfferSnapshot(30, params));
  release_sink_.Notify();
  evaluator->Drain();
  std::vector<int64_t> steps;
  for (const EvaluationLine& point : Points()) steps.push_back(point.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(evaluator->deferred(), 1);
}

// A snapshot that cannot be written to wait is refused, the failure kept; the evaluator goes on.
TEST_F(TestEvaluatorTest, ASnapshotThatCannotBeWrittenIsRefused) {
  auto dir = launch::TempDir::Create("ringside-evaluator-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  hold_first_point_ = true;
  TestEvaluator::Options options;
  options.spill_prefix = dir->File("no-such-directory/waiting-");
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 30; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params));
  in_sink_.WaitForNotification();
  EXPECT_FALSE(evaluator->OfferSnapshot(20, params));
  release_sink_.Notify();
  evaluator->Drain();
  EXPECT_TRUE(evaluator->OfferSnapshot(30, params));
  evaluator->Drain();
  std::vector<int64_t> steps;
  for (const EvaluationLine& point : Points()) steps.push_back(point.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 30}));
  EXPECT_EQ(evaluator->deferred(), 1);
  EXPECT_EQ(evaluator->failures().count, 1);
  EXPECT_THAT(std::string(evaluator->failures().last.message()),
              ::testing::HasSubstr("no-such-directory"));
}

TEST_F(TestEvaluatorTest, AShardReadThatStraddlesAStepIsReadAgainAndTakesTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  std::atomic<int> reads{0};
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  ASSERT_TRUE(evaluator->OfferShardRead(5, [&](absl::Span<float> out) -> absl::StatusOr<uint64_t> {
    if (++reads < 3) return absl::AbortedError("ps-0 held step 5, ps-1 step 6");
    std::copy(params.begin(), params.end(), out.begin());
    return 6;
  }));
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(reads.load(), 3);
  EXPECT_EQ(points[0].step, 6) << "the step the shards held when read, not the one offered";
  EXPECT_DOUBLE_EQ(points[0].seconds, 6.0);
  EXPECT_DOUBLE_EQ(points[0].loss, 0.6);
  EXPECT_DOUBLE_EQ(points[0].test_accuracy, Direct(params).accuracy);
}

TEST_F(TestEvaluatorTest, AReadOfAStepAlreadyEvaluatedGivesNoSecondPoint) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  auto shards_at_six = [&](absl::Span<float> out) -> absl::StatusOr<uint64_t> {
    std::copy(params.begin(), params.end(), out.begin());
    return 6;
  };
  ASSERT_TRUE(evaluator->OfferShardRead(5, shards_at_six));
  evaluator->Drain();
  ASSERT_TRUE(evaluator->OfferShardRead(6, shards_at_six));
  evaluator->Drain();
  EXPECT_EQ(Points().size(), 1u);
  EXPECT_EQ(evaluator->repeated(), 1);
}

TEST_F(TestEvaluatorTest, APsPointWaitsForTheTrainerToReportTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  Ended(*evaluator, 1, 0.25);
  absl::Notification read;
  ASSERT_TRUE(evaluator->OfferShardRead(1, [&](absl::Span<float> out) -> absl::StatusOr<uint64_t> {
    std::copy(params.begin(), params.end(), out.begin());
    read.Notify();
    return 2;  // the shards applied step 2 before worker-0 finished it
  }));
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
  ASSERT_TRUE(evaluator->OfferShardRead(1, [&](absl::Span<float>) -> absl::StatusOr<uint64_t> {
    ++reads;
    return absl::UnavailableError("ps-1 is gone");
  }));
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 1) << "only a straddled read is read again";
  ASSERT_TRUE(evaluator->OfferShardRead(1, [&](absl::Span<float>) -> absl::StatusOr<uint64_t> {
    ++reads;
    return absl::AbortedError("straddling");
  }));
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 5) << "1 + read_attempts";
  // The shards held a step this worker never reported (its step failed): no point.
  ASSERT_TRUE(evaluator->OfferShardRead(
      1, [&](absl::Span<float>) -> absl::StatusOr<uint64_t> { return 9; }));
  evaluator->Drain();
  EXPECT_EQ(evaluator->failures().count, 3);
  EXPECT_EQ(evaluator->failures().last.code(), absl::StatusCode::kDeadlineExceeded);
  // A snapshot of another model's size.
  EXPECT_TRUE(evaluator->OfferSnapshot(0, std::vector<float>(params.size() + 1)));
  const TestEvaluator::Failures failures = evaluator->failures();
  EXPECT_EQ(failures.count, 4);
  EXPECT_EQ(failures.last.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Points().empty());
  EXPECT_TRUE(evaluator->OfferSnapshot(0, params));  // and it goes on evaluating
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
