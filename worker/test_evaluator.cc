#include "worker/test_evaluator.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

// Step records kept for ps points: far more than the steps one evaluation can fall behind by.
constexpr size_t kKeptSteps = 4096;

}  // namespace

absl::StatusOr<std::unique_ptr<TestEvaluator>> TestEvaluator::Create(const ModelSpec& spec,
                                                                     const Dataset& test,
                                                                     const std::string& device,
                                                                     Sink sink, Options options) {
  if (test.rows() == 0) {
    return absl::FailedPreconditionError("the data has no held-out test set to evaluate on");
  }
  if (test.features != spec.inputs() || test.classes != spec.classes()) {
    return absl::InvalidArgumentError(absl::StrCat("the test set (", test.features, " inputs, ",
                                                   test.classes, " classes) does not fit model ",
                                                   spec.ToString()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer, MakeGradientComputer(device, spec));
  return std::unique_ptr<TestEvaluator>(
      new TestEvaluator(test, std::move(computer), std::move(sink), options));
}

TestEvaluator::TestEvaluator(const Dataset& test, std::unique_ptr<GradientComputer> computer,
                             Sink sink, Options options)
    : test_(test), computer_(std::move(computer)), sink_(std::move(sink)), options_(options) {
  thread_ = std::thread([this] { Loop(); });
  reader_thread_ = std::thread([this] { ReaderLoop(); });
}

TestEvaluator::~TestEvaluator() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  reader_thread_.join();
  thread_.join();
  absl::MutexLock lock(&mu_);
  if (spill_dir_.empty()) return;
  for (int64_t completed : spilled_) std::remove(SpillPathLocked(completed).c_str());
  rmdir(spill_dir_.c_str());
}

void TestEvaluator::StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss) {
  absl::MutexLock lock(&mu_);
  if (!origin_.has_value()) origin_ = start;
  steps_[completed] = StepRecord{end, loss};
  while (steps_.size() > kKeptSteps) steps_.erase(steps_.begin());
}

void TestEvaluator::FailedLocked(absl::Status why) {
  ++failures_.count;
  failures_.last = std::move(why);
}

bool TestEvaluator::FreeLocked() const { return stage_ == Stage::kFree && spilled_.empty(); }

void TestEvaluator::TakeLocked(int64_t completed, Stage stage) {
  // At the first offer: every worker has an evaluator (any may become rank 0), and only rank 0's
  // holds a copy.
  params_.resize(computer_->spec().parameter_count());
  stage_ = stage;
  taken_ = Taken{completed, nullptr, absl::ZeroDuration()};
}

bool TestEvaluator::OfferSnapshot(int64_t completed, absl::Span<const float> params) {
  const size_t parameter_count = computer_->spec().parameter_count();
  if (params.size() != parameter_count) {
    absl::MutexLock lock(&mu_);
    FailedLocked(absl::InvalidArgumentError(absl::StrCat(
        "a snapshot of ", params.size(), " parameters for a model of ", parameter_count)));
    return true;  // taken, and failed: offering it again would not help
  }
  {
    absl::MutexLock lock(&mu_);
    if (FreeLocked()) {
      TakeLocked(completed, Stage::kFilled);
      // Under the lock, which only the trainer (StepEnded) and Drain contend for: the threads
      // are idle while the copy is free.
      std::copy(params.begin(), params.end(), params_.begin());
      return true;
    }
  }
  return Spill(completed, params);
}

bool TestEvaluator::Spill(int64_t completed, absl::Span<const float> params) {
  const uint64_t bytes = params.size() * sizeof(float);
  std::string path;
  {
    absl::MutexLock lock(&mu_);
    if (options_.spill_prefix.empty() ||
        (spilled_.size() + 1) * bytes > options_.max_spilled_bytes) {
      ++deferred_;
      return false;
    }
    if (spill_dir_.empty()) {
      std::string dir = options_.spill_prefix + "XXXXXX";
      if (mkdtemp(dir.data()) == nullptr) {
        ++deferred_;
        FailedLocked(absl::InternalError(absl::StrCat(
            "cannot make a directory for waiting snapshots at ", dir, ": ", strerror(errno))));
        return false;
      }
      spill_dir_ = dir;
    }
    path = SpillPathLocked(completed);
  }
  // Off the lock: only this (the trainer's) thread adds to spilled_, so the order holds.
  const absl::Status written = WriteScratchFile(
      path, absl::string_view(reinterpret_cast<const char*>(params.data()), bytes));
  absl::MutexLock lock(&mu_);
  if (!written.ok()) {
    ++deferred_;
    FailedLocked(written);
    return false;
  }
  spilled_.push_back(completed);
  return true;
}

std::string TestEvaluator::SpillPathLocked(int64_t completed) const {
  return absl::StrCat(spill_dir_, "/after-step-", completed, ".f32");
}

absl::Status TestEvaluator::LoadSpilled(const std::string& path) {
  // The copy exists: a snapshot waits only while an earlier offer holds it.
  const absl::Status read = ReadFileInto(
      path,
      absl::MakeSpan(reinterpret_cast<char*>(params_.data()), params_.size() * sizeof(float)));
  std::remove(path.c_str());
  return read;
}

bool TestEvaluator::OfferShardRead(int64_t completed, ShardReader reader) {
  absl::MutexLock lock(&mu_);
  if (!FreeLocked()) {
    ++deferred_;
    return false;
  }
  TakeLocked(completed, Stage::kReading);
  taken_.reader = std::move(reader);
  return true;
}

void TestEvaluator::Drain() {
  absl::MutexLock lock(&mu_);
  auto free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || FreeLocked(); };
  mu_.Await(absl::Condition(&free));
}

int64_t TestEvaluator::deferred() const {
  absl::MutexLock lock(&mu_);
  return deferred_;
}

int64_t TestEvaluator::repeated() const {
  absl::MutexLock lock(&mu_);
  return repeated_;
}

TestEvaluator::Failures TestEvaluator::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void TestEvaluator::Loop() {
  // The evaluation takes the machine's idle time first: the trainers' threads keep their share.
  // Best effort (a container may forbid it); Linux's setpriority takes a thread id here.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  while (true) {
    Taken taken;
    std::string spilled;  // the file to fill the copy from, if any
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || stage_ == Stage::kFilled ||
               (stage_ == Stage::kFree && !spilled_.empty());
      };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      if (stage_ == Stage::kFree) {
        taken_ = Taken{spilled_.front(), nullptr, absl::ZeroDuration()};
        spilled = SpillPathLocked(spilled_.front());
        spilled_.pop_front();
      }
      stage_ = Stage::kEvaluating;
      taken = taken_;
    }
    if (!spilled.empty()) {
      if (absl::Status loaded = LoadSpilled(spilled); !loaded.ok()) {
        absl::MutexLock lock(&mu_);
        stage_ = Stage::kFree;
        FailedLocked(loaded);
        continue;
      }
    }
    absl::StatusOr<std::optional<EvaluationLine>> point = Evaluate(taken);
    if (point.ok() && point->has_value()) {
      sink_(**point);
      last_step_ = (*point)->step;
    }
    absl::MutexLock lock(&mu_);
    stage_ = Stage::kFree;
    if (!point.ok()) {
      FailedLocked(point.status());
    } else if (!point->has_value()) {
      ++repeated_;
    }
  }
}

void TestEvaluator::ReaderLoop() {
  while (true) {
    Taken taken;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || stage_ == Stage::kReading;
      };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      taken = taken_;
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<int64_t> step = ReadShards(taken);
    absl::MutexLock lock(&mu_);
    if (!step.ok()) {
      stage_ = Stage::kFree;
      FailedLocked(step.status());
      continue;
    }
    taken_ = Taken{*step, nullptr, absl::Now() - start};
    stage_ = Stage::kFilled;  // a snapshot of the shards now
  }
}

absl::StatusOr<std::optional<EvaluationLine>> TestEvaluator::Evaluate(const Taken& taken) {
  const absl::Time start = absl::Now();
  const int64_t step = taken.completed;
  // A ps read can find the shards where the previous one did (the trainer offered again before
  // they moved on): that point is already there.
  if (last_step_.has_value() && step <= *last_step_) return std::nullopt;
  ASSIGN_OR_RETURN(const Evaluation evaluation,
                   EvaluateDataset(*computer_, params_, test_, options_.chunk_rows));
  const absl::Duration took = absl::Now() - start + taken.read_time;
  ASSIGN_OR_RETURN(const auto when_and_loss, WhenAndLossOf(step));
  EvaluationLine point;
  point.step = step;
  point.seconds = when_and_loss.first;
  point.loss = when_and_loss.second;
  point.test_accuracy = evaluation.accuracy;
  point.test_loss = evaluation.mean_loss;
  point.eval_seconds = absl::ToDoubleSeconds(took);
  return std::optional<EvaluationLine>(point);
}

absl::StatusOr<int64_t> TestEvaluator::ReadShards(const Taken& taken) {
  absl::Status last;
  for (int attempt = 0; attempt < options_.read_attempts; ++attempt) {
    absl::StatusOr<uint64_t> step = taken.reader(absl::MakeSpan(params_));
    if (step.ok()) return static_cast<int64_t>(*step);
    last = step.status();
    // Only a read that straddled a step is worth repeating at once.
    if (last.code() != absl::StatusCode::kAborted) break;
  }
  return Annotate(last,
                  absl::StrCat("reading the shards' parameters after step ", taken.completed));
}

absl::StatusOr<std::pair<double, double>> TestEvaluator::WhenAndLossOf(int64_t step) {
  absl::MutexLock lock(&mu_);
  if (step == 0) return std::make_pair(0.0, 0.0);  // the initial parameters: before any step
  auto reported = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || steps_.count(step) > 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&reported), options_.step_report_timeout);
  auto it = steps_.find(step);
  if (it == steps_.end() || !origin_.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the shards held step ", step, " but this worker never reported ending it"));
  }
  return std::make_pair(absl::ToDoubleSeconds(it->second.end - *origin_), it->second.loss);
}

}  // namespace ringside::worker
