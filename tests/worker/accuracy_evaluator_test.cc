// The test evaluator on its own: snapshots evaluated exactly as one direct evaluation, points
// timed from the first step, snapshots waiting on disk in order while an earlier one is evaluated
// (within their budget, files removed once evaluated), a second shard read refused while one is in
// progress (nothing read), ps reads written segment by segment, retried while the shards straddle
// a step and labelled with the step they held, failures counted. Readers stand in for the shards;
// readers and the sink block on notifications, never on clocks.
#include "worker/accuracy_evaluator.h"

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

using ShardReader = AccuracyEvaluator::ShardReader;
using ValuesWriter = AccuracyEvaluator::ValuesWriter;

// A reader of shards that hold `params` at `step`: written in two segments, the second first, as
// two shards' replies may land.
ShardReader ShardsAt(const std::vector<float>& params, uint64_t step) {
  return [&params, step](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
    if (count != params.size()) return absl::InvalidArgumentError("count");
    const uint64_t half = count / 2;
    auto bytes = [&](uint64_t first, uint64_t end) {
      return absl::string_view(reinterpret_cast<const char*>(params.data() + first),
                               (end - first) * sizeof(float));
    };
    if (absl::Status status = write(half, bytes(half, count)); !status.ok()) return status;
    if (absl::Status status = write(0, bytes(0, half)); !status.ok()) return status;
    return step;
  };
}

class AccuracyEvaluatorTest : public ::testing::Test {
 protected:
  AccuracyEvaluatorTest()
      : spec_(*ModelSpec::Parse("6,12,4", "tanh")),
        test_(MakeSyntheticDataset(300, 6, 4, 3)),
        origin_(absl::FromUnixSeconds(1000)) {}

  std::unique_ptr<AccuracyEvaluator> Make(AccuracyEvaluator::Options options = {}) {
    if (options.snapshot_prefix.empty()) options.snapshot_prefix = dir_->File("snapshots-");
    auto evaluator = AccuracyEvaluator::Create(
        spec_, test_,
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
  void Ended(AccuracyEvaluator& evaluator, int64_t completed, double loss) {
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
  // Files in the evaluator's snapshot directory (the one entry of dir_), or -1 when there is none.
  int Snapshots() {
    std::filesystem::directory_iterator entry(dir_->path());
    if (entry == std::filesystem::directory_iterator()) return -1;
    return FilesIn(entry->path().string());
  }
  std::vector<int64_t> Steps() {
    std::vector<int64_t> steps;
    for (const EvaluationLine& point : Points()) steps.push_back(point.step);
    return steps;
  }
  std::vector<EvaluationLine> Points() {
    absl::MutexLock lock(&mu_);
    return points_;
  }

  const ModelSpec spec_;
  const Dataset test_;
  const absl::StatusOr<launch::TempDir> dir_ = launch::TempDir::Create("ringside-evaluator-");
  const absl::Time origin_;
  absl::Mutex mu_;
  std::vector<EvaluationLine> points_ ABSL_GUARDED_BY(mu_);
  // Set before the first submission: the sink holds the compute thread at the first point until
  // release_sink_, so the test knows the evaluator is busy.
  bool hold_first_point_ = false;  // the compute thread's once submitted
  absl::Notification in_sink_, release_sink_;
};

TEST_F(AccuracyEvaluatorTest, APointCarriesTheBytesSentByTheEndOfItsStep) {
  auto evaluator = Make();
  EXPECT_TRUE(evaluator->OfferSnapshot(0, InitialParameters(spec_, 1)));
  evaluator->Drain();
  for (int64_t step = 1; step <= 3; ++step) {
    evaluator->StepEnded(step, origin_ + absl::Seconds(step - 1), origin_ + absl::Seconds(step),
                         0.5, 1000 * step);
  }
  // A ps read that finds the shards at step 2, offered at step 1: step 2's bytes.
  const std::vector<float> params = InitialParameters(spec_, 2);
  EXPECT_TRUE(evaluator->OfferShardRead(1, ShardsAt(params, 2)));
  evaluator->Drain();
  const std::vector<EvaluationLine> points = Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].sent_bytes, 0) << "the initial parameters: nothing sent yet";
  EXPECT_EQ(points[1].step, 2);
  EXPECT_EQ(points[1].sent_bytes, 2000);
}

TEST_F(AccuracyEvaluatorTest, ASnapshotIsEvaluatedOnTheWholeTestSetAndTimedFromTheFirstStep) {
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

// Offers taken while an earlier snapshot is evaluated wait on disk, in the evaluator's directory
// and not in memory, and are evaluated in order, each exactly: ring snapshots and shard reads
// alike. The files are gone once evaluated, and their directory with the evaluator.
TEST_F(AccuracyEvaluatorTest, OffersTakenWhileOneIsEvaluatedWaitOnDiskInOrder) {
  hold_first_point_ = true;
  auto evaluator = Make();
  EXPECT_EQ(Snapshots(), -1) << "no directory before the first offer";
  std::vector<std::vector<float>> params;
  for (int seed = 1; seed <= 4; ++seed) params.push_back(InitialParameters(spec_, seed));
  for (int64_t step = 1; step <= 40; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params[0]));
  in_sink_.WaitForNotification();  // the compute thread is held at step 10's point
  EXPECT_TRUE(evaluator->OfferSnapshot(20, params[1]));
  EXPECT_TRUE(evaluator->OfferSnapshot(30, params[2]));
  absl::Notification read;
  ASSERT_TRUE(evaluator->OfferShardRead(
      40, [&](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
        absl::StatusOr<uint64_t> step = ShardsAt(params[3], 40)(count, write);
        read.Notify();
        return step;
      }));
  read.WaitForNotification();
  EXPECT_EQ(Snapshots(), 4) << "10 (being evaluated), 20, 30 and the read of 40 are files";
  release_sink_.Notify();
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{10, 20, 30, 40}));
  const std::vector<EvaluationLine> points = Points();
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_NEAR(points[p].test_loss, Direct(params[p]).mean_loss, 1e-6) << p;
  }
  EXPECT_EQ(evaluator->failures().count, 0) << evaluator->failures().last;
  EXPECT_EQ(Snapshots(), 0);
  evaluator.reset();
  EXPECT_EQ(FilesIn(dir_->path()), 0);
}

// One shard read at a time: a read offered while the last is in progress is refused (counted) and
// never reads; the trainer's next offer is taken.
TEST_F(AccuracyEvaluatorTest, AShardReadWhileOneIsInProgressIsRefused) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  for (int64_t step = 1; step <= 8; ++step) Ended(*evaluator, step, 0.1 * step);
  absl::Notification reading, release;
  ASSERT_TRUE(evaluator->OfferShardRead(
      5, [&](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
        reading.Notify();
        release.WaitForNotification();
        return ShardsAt(params, 6)(count, write);
      }));
  reading.WaitForNotification();
  bool read = false;
  EXPECT_FALSE(
      evaluator->OfferShardRead(7, [&](uint64_t, const ValuesWriter&) -> absl::StatusOr<uint64_t> {
        read = true;
        return 7;
      }));
  release.Notify();
  evaluator->Drain();
  EXPECT_TRUE(evaluator->OfferShardRead(8, ShardsAt(params, 8)));
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{6, 8}));
  EXPECT_FALSE(read) << "a refused read never reads";
  EXPECT_EQ(evaluator->deferred(), 1);
}

// Beyond max_snapshot_bytes an offer is refused (counted): the trainer offers again later. The
// snapshot being evaluated counts until its point is with the sink.
TEST_F(AccuracyEvaluatorTest, SnapshotsBeyondTheDiskBudgetAreRefused) {
  hold_first_point_ = true;
  AccuracyEvaluator::Options options;
  options.max_snapshot_bytes = 2 * spec_.parameter_count() * sizeof(float);
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 40; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params));
  in_sink_.WaitForNotification();
  EXPECT_TRUE(evaluator->OfferSnapshot(20, params));
  EXPECT_FALSE(evaluator->OfferSnapshot(30, params));
  EXPECT_FALSE(evaluator->OfferShardRead(30, ShardsAt(params, 30)));
  release_sink_.Notify();
  evaluator->Drain();
  EXPECT_TRUE(evaluator->OfferSnapshot(40, params));
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{10, 20, 40}));
  EXPECT_EQ(evaluator->deferred(), 2);
}

// A budget smaller than one snapshot still takes one at a time: a model larger than the budget is
// evaluated, never refused for ever.
TEST_F(AccuracyEvaluatorTest, OneSnapshotIsTakenWhateverTheBudget) {
  hold_first_point_ = true;
  AccuracyEvaluator::Options options;
  options.max_snapshot_bytes = 1;
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  for (int64_t step = 1; step <= 20; ++step) Ended(*evaluator, step, 1);
  ASSERT_TRUE(evaluator->OfferSnapshot(10, params));
  in_sink_.WaitForNotification();
  EXPECT_FALSE(evaluator->OfferSnapshot(15, params));
  release_sink_.Notify();
  evaluator->Drain();
  EXPECT_TRUE(evaluator->OfferSnapshot(20, params));
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{10, 20}));
}

// Where no snapshot can be written, offers are refused with the failure kept; never fatal.
TEST_F(AccuracyEvaluatorTest, ASnapshotThatCannotBeWrittenIsRefused) {
  AccuracyEvaluator::Options options;
  options.snapshot_prefix = dir_->File("no-such-directory/snapshots-");
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  EXPECT_FALSE(evaluator->OfferSnapshot(0, params));
  EXPECT_FALSE(evaluator->OfferShardRead(0, ShardsAt(params, 0)));
  evaluator->Drain();
  EXPECT_TRUE(Points().empty());
  EXPECT_EQ(evaluator->deferred(), 2);
  EXPECT_EQ(evaluator->failures().count, 2);
  EXPECT_THAT(std::string(evaluator->failures().last.message()),
              ::testing::HasSubstr("no-such-directory"));
}

// A reader that writes past the model (a reply the reader did not bound) fails the read with the
// file's error; nothing is evaluated, the next read is taken.
TEST_F(AccuracyEvaluatorTest, AReadWritingPastTheModelFails) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  Ended(*evaluator, 1, 0.5);
  ASSERT_TRUE(evaluator->OfferShardRead(
      1, [&](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
        const float extra[2] = {1, 2};
        if (absl::Status status =
                write(count - 1, absl::string_view(reinterpret_cast<const char*>(extra), 8));
            !status.ok()) {
          return status;
        }
        return 1;
      }));
  evaluator->Drain();
  EXPECT_TRUE(Points().empty());
  EXPECT_EQ(evaluator->failures().count, 1);
  EXPECT_EQ(evaluator->failures().last.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(evaluator->OfferShardRead(1, ShardsAt(params, 1)));
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{1}));
}

TEST_F(AccuracyEvaluatorTest, AShardReadThatStraddlesAStepIsReadAgainAndTakesTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  std::atomic<int> reads{0};
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  ASSERT_TRUE(evaluator->OfferShardRead(
      5, [&](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
        if (++reads < 3) return absl::AbortedError("ps-0 held step 5, ps-1 step 6");
        return ShardsAt(params, 6)(count, write);
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

TEST_F(AccuracyEvaluatorTest, AReadOfAStepAlreadyEvaluatedGivesNoSecondPoint) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  for (int64_t step = 1; step <= 6; ++step) Ended(*evaluator, step, 0.1 * step);
  ASSERT_TRUE(evaluator->OfferShardRead(5, ShardsAt(params, 6)));
  evaluator->Drain();
  ASSERT_TRUE(evaluator->OfferShardRead(6, ShardsAt(params, 6)));
  evaluator->Drain();
  EXPECT_EQ(Points().size(), 1u);
  EXPECT_EQ(evaluator->repeated(), 1);
  EXPECT_EQ(Snapshots(), 0) << "the repeated read's file is removed";
}

TEST_F(AccuracyEvaluatorTest, APsPointWaitsForTheTrainerToReportTheShardsStep) {
  auto evaluator = Make();
  const std::vector<float> params = InitialParameters(spec_, 4);
  Ended(*evaluator, 1, 0.25);
  absl::Notification read;
  ASSERT_TRUE(evaluator->OfferShardRead(
      1, [&](uint64_t count, const ValuesWriter& write) -> absl::StatusOr<uint64_t> {
        read.Notify();
        return ShardsAt(params, 2)(count, write);  // the shards applied step 2 before worker-0 did
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

TEST_F(AccuracyEvaluatorTest, FailuresAreCountedAndNeverFatal) {
  AccuracyEvaluator::Options options;
  options.read_attempts = 4;
  options.step_report_timeout = absl::ZeroDuration();
  auto evaluator = Make(options);
  const std::vector<float> params = InitialParameters(spec_, 1);
  std::atomic<int> reads{0};
  ASSERT_TRUE(
      evaluator->OfferShardRead(1, [&](uint64_t, const ValuesWriter&) -> absl::StatusOr<uint64_t> {
        ++reads;
        return absl::UnavailableError("ps-1 is gone");
      }));
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 1) << "only a straddled read is read again";
  ASSERT_TRUE(
      evaluator->OfferShardRead(1, [&](uint64_t, const ValuesWriter&) -> absl::StatusOr<uint64_t> {
        ++reads;
        return absl::AbortedError("straddling");
      }));
  evaluator->Drain();
  EXPECT_EQ(reads.load(), 5) << "1 + read_attempts";
  // The shards held a step this worker never reported (its step failed): no point.
  ASSERT_TRUE(evaluator->OfferShardRead(1, ShardsAt(params, 9)));
  evaluator->Drain();
  EXPECT_EQ(evaluator->failures().count, 3);
  EXPECT_EQ(evaluator->failures().last.code(), absl::StatusCode::kDeadlineExceeded);
  // A snapshot of another model's size.
  EXPECT_TRUE(evaluator->OfferSnapshot(0, std::vector<float>(params.size() + 1)));
  const AccuracyEvaluator::Failures failures = evaluator->failures();
  EXPECT_EQ(failures.count, 4);
  EXPECT_EQ(failures.last.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Points().empty());
  Ended(*evaluator, 10, 0.5);
  EXPECT_TRUE(evaluator->OfferSnapshot(10, params));  // and it goes on evaluating
  evaluator->Drain();
  EXPECT_EQ(Steps(), (std::vector<int64_t>{10}));
}

TEST_F(AccuracyEvaluatorTest, NoTestSetOrAMismatchedOneIsRefused) {
  const Dataset empty;
  EXPECT_EQ(AccuracyEvaluator::Create(spec_, empty, nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const Dataset other = MakeSyntheticDataset(10, 5, 4, 3);
  EXPECT_EQ(AccuracyEvaluator::Create(spec_, other, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
