#include "worker/test_evaluator.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
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
    : test_(test),
      computer_(std::move(computer)),
      sink_(std::move(sink)),
      options_(options),
      capacity_(std::max<size_t>(
          1, options.max_waiting_bytes /
                 std::max<size_t>(1, computer_->spec().parameter_count() * sizeof(float)))) {
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
}

void TestEvaluator::StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss) {
  absl::MutexLock lock(&mu_);
  if (!origin_.has_value()) origin_ = start;
  steps_[completed] = StepRecord{end, loss};
  while (steps_.size() > kKeptSteps) steps_.erase(steps_.begin());
}

void TestEvaluator::SubmitSnapshot(int64_t completed, absl::Span<const float> params) {
  Request request;
  request.completed = completed;
  request.params.assign(params.begin(), params.end());
  Submit(std::move(request));
}

void TestEvaluator::SubmitShardRead(int64_t completed, ShardReader reader) {
  Request request;
  request.completed = completed;
  request.reader = std::move(reader);
  absl::MutexLock lock(&mu_);
  if (pending_read_.has_value()) ++dropped_;
  pending_read_ = std::move(request);
}

void TestEvaluator::Submit(Request request) {
  absl::MutexLock lock(&mu_);
  SubmitLocked(std::move(request));
}

void TestEvaluator::SubmitLocked(Request request) {
  if (pending_.size() >= capacity_) {
    // Full: the newest waiting one makes way, so the earliest points (when an accuracy was first
    // reached) and the last (the final parameters) are kept.
    ++dropped_;
    pending_.back() = std::move(request);
    return;
  }
  pending_.push_back(std::move(request));
}

void TestEvaluator::Drain() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (!pending_read_.has_value() && !reading_ && pending_.empty() && !busy_);
  };
  mu_.Await(absl::Condition(&idle));
}

int64_t TestEvaluator::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
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
    Request request;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !pending_.empty(); };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      request = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    absl::StatusOr<std::optional<EvaluationLine>> point = Evaluate(request);
    if (point.ok() && point->has_value()) {
      sink_(**point);
      last_step_ = (*point)->step;
    }
    absl::MutexLock lock(&mu_);
    busy_ = false;
    if (!point.ok()) {
      ++failures_.count;
      failures_.last = point.status();
    } else if (!point->has_value()) {
      ++dropped_;
    }
  }
}

void TestEvaluator::ReaderLoop() {
  while (true) {
    Request request;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || pending_read_.has_value();
      };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      request = *std::move(pending_read_);
      pending_read_.reset();
      reading_ = true;
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<int64_t> step = ParametersOf(request);
    request.read_time = absl::Now() - start;
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!step.ok()) {
      ++failures_.count;
      failures_.last = step.status();
      continue;
    }
    request.completed = *step;
    request.reader = nullptr;
    SubmitLocked(std::move(request));  // a snapshot of the shards now
  }
}

absl::StatusOr<std::optional<EvaluationLine>> TestEvaluator::Evaluate(Request& request) {
  const absl::Time start = absl::Now();
  const int64_t step = request.completed;
  // A ps read can find the shards where the previous one did (the trainer submitted again
  // before they moved on): that point is already there.
  if (last_step_.has_value() && step <= *last_step_) return std::nullopt;
  ASSIGN_OR_RETURN(const Evaluation evaluation,
                   EvaluateDataset(*computer_, request.params, test_, options_.chunk_rows));
  const absl::Duration took = absl::Now() - start + request.read_time;
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

absl::StatusOr<int64_t> TestEvaluator::ParametersOf(Request& request) {
  absl::Status last;
  for (int attempt = 0; attempt < options_.read_attempts; ++attempt) {
    absl::StatusOr<server::ShardParameters> read = request.reader();
    if (read.ok()) {
      request.params = std::move(read->parameters);
      return static_cast<int64_t>(read->step);
    }
    last = read.status();
    // Only a read that straddled a step is worth repeating at once.
    if (last.code() != absl::StatusCode::kAborted) break;
  }
  return Annotate(last,
                  absl::StrCat("reading the shards' parameters after step ", request.completed));
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
