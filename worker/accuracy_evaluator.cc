#include "worker/accuracy_evaluator.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "worker/batching.h"

namespace ringside::worker {
namespace {

// Step records kept for ps points: far more than the steps one evaluation can fall behind by.
constexpr size_t kKeptSteps = 4096;

}  // namespace

absl::StatusOr<std::unique_ptr<AccuracyEvaluator>> AccuracyEvaluator::Create(const ModelSpec& spec,
                                                                             const Dataset& test,
                                                                             Sink sink,
                                                                             Options options) {
  if (test.rows() == 0) {
    return absl::FailedPreconditionError("the data has no held-out test set to evaluate on");
  }
  if (test.features != spec.inputs() || test.classes != spec.classes()) {
    return absl::InvalidArgumentError(absl::StrCat("the test set (", test.features, " inputs, ",
                                                   test.classes, " classes) does not fit model ",
                                                   spec.ToString()));
  }
  if (options.snapshot_prefix.empty()) {
    std::error_code error;
    const std::filesystem::path temp = std::filesystem::temp_directory_path(error);
    options.snapshot_prefix = ((error ? "/tmp" : temp) / "ringside-evaluation-").string();
  }
  return std::unique_ptr<AccuracyEvaluator>(
      new AccuracyEvaluator(spec, test, std::move(sink), options));
}

AccuracyEvaluator::AccuracyEvaluator(const ModelSpec& spec, const Dataset& test, Sink sink,
                                     Options options)
    : test_(test), sink_(std::move(sink)), options_(options), pass_(spec) {
  thread_ = std::thread([this] { Loop(); });
  reader_thread_ = std::thread([this] { ReaderLoop(); });
}

AccuracyEvaluator::~AccuracyEvaluator() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  reader_thread_.join();
  thread_.join();
  absl::MutexLock lock(&mu_);
  if (dir_.empty()) return;
  for (const Snapshot& snapshot : waiting_) std::remove(snapshot.path.c_str());
  rmdir(dir_.c_str());
}

void AccuracyEvaluator::StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss,
                                  int64_t sent_bytes) {
  absl::MutexLock lock(&mu_);
  if (!origin_.has_value()) origin_ = start;
  steps_[completed] = StepRecord{end, loss, sent_bytes};
  while (steps_.size() > kKeptSteps) steps_.erase(steps_.begin());
}

void AccuracyEvaluator::FailedLocked(absl::Status why) {
  ++failures_.count;
  failures_.last = std::move(why);
}

bool AccuracyEvaluator::ReserveLocked() {
  if (files_ > 0 &&
      static_cast<uint64_t>(files_ + 1) * SnapshotBytes() > options_.max_snapshot_bytes) {
    ++deferred_;
    return false;
  }
  if (dir_.empty()) {
    std::string dir = options_.snapshot_prefix + "XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) {
      ++deferred_;
      FailedLocked(absl::InternalError(
          absl::StrCat("cannot make a directory for test evaluation snapshots at ", dir, ": ",
                       strerror(errno))));
      return false;
    }
    dir_ = dir;
  }
  ++files_;
  return true;
}

void AccuracyEvaluator::ReleaseLocked(const std::string& path) {
  if (!path.empty()) std::remove(path.c_str());
  --files_;
}

void AccuracyEvaluator::QueueLocked(Snapshot snapshot) {
  // A ps read can find the shards where the previous one did (the trainer offered again before
  // they moved on): that point is taken already.
  if (newest_.has_value() && snapshot.completed <= *newest_) {
    ++repeated_;
    ReleaseLocked(snapshot.path);
    return;
  }
  newest_ = snapshot.completed;
  waiting_.push_back(std::move(snapshot));
}

std::string AccuracyEvaluator::PathLocked(absl::string_view name) const {
  return absl::StrCat(dir_, "/", name);
}

bool AccuracyEvaluator::OfferSnapshot(int64_t completed, absl::Span<const float> params) {
  if (params.size() != pass_.spec().parameter_count()) {
    absl::MutexLock lock(&mu_);
    FailedLocked(absl::InvalidArgumentError(absl::StrCat("a snapshot of ", params.size(),
                                                         " parameters for a model of ",
                                                         pass_.spec().parameter_count())));
    return true;  // taken, and failed: offering it again would not help
  }
  Snapshot snapshot{completed, "", absl::ZeroDuration()};
  {
    absl::MutexLock lock(&mu_);
    if (!ReserveLocked()) return false;
    snapshot.path = PathLocked(absl::StrCat("after-step-", completed, ".f32"));
  }
  // Off the lock: the compute and reader threads go on meanwhile.
  absl::StatusOr<ScratchFile> file = ScratchFile::Create(snapshot.path, SnapshotBytes());
  absl::Status written = file.status();
  if (written.ok()) {
    written = file->Write(
        0, absl::string_view(reinterpret_cast<const char*>(params.data()), SnapshotBytes()));
  }
  absl::MutexLock lock(&mu_);
  if (!written.ok()) {
    ReleaseLocked(file.ok() ? snapshot.path : "");  // never a file this offer did not make
    ++deferred_;
    FailedLocked(written);
    return false;
  }
  QueueLocked(std::move(snapshot));
  return true;
}

bool AccuracyEvaluator::OfferShardRead(int64_t completed, ShardReader reader) {
  absl::MutexLock lock(&mu_);
  if (read_.has_value()) {
    ++deferred_;
    return false;
  }
  if (!ReserveLocked()) return false;
  read_.emplace(completed, std::move(reader));
  return true;
}

void AccuracyEvaluator::Drain() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (!read_.has_value() && !evaluating_ && waiting_.empty());
  };
  mu_.Await(absl::Condition(&idle));
}

int64_t AccuracyEvaluator::deferred() const {
  absl::MutexLock lock(&mu_);
  return deferred_;
}

int64_t AccuracyEvaluator::repeated() const {
  absl::MutexLock lock(&mu_);
  return repeated_;
}

AccuracyEvaluator::Failures AccuracyEvaluator::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void AccuracyEvaluator::Loop() {
  // The evaluation takes the machine's idle time first: the trainers' threads keep their share.
  // Best effort (a container may forbid it); Linux's setpriority takes a thread id here.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  while (true) {
    Snapshot snapshot;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !waiting_.empty(); };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      snapshot = std::move(waiting_.front());
      waiting_.pop_front();
      evaluating_ = true;
    }
    absl::StatusOr<EvaluationLine> point = Evaluate(snapshot);
    if (point.ok()) sink_(*point);
    absl::MutexLock lock(&mu_);
    ReleaseLocked(snapshot.path);
    evaluating_ = false;
    if (!point.ok()) FailedLocked(point.status());
  }
}

void AccuracyEvaluator::ReaderLoop() {
  while (true) {
    std::pair<int64_t, ShardReader> read;
    std::string path;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || read_.has_value(); };
      mu_.Await(absl::Condition(&work));
      if (stopping_) {
        if (read_.has_value()) --files_;
        return;
      }
      read = *read_;
      path = PathLocked(absl::StrCat("read-after-step-", read.first, ".f32"));
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<int64_t> step = ReadShards(read.first, read.second, path);
    absl::MutexLock lock(&mu_);
    read_.reset();
    if (!step.ok()) {
      ReleaseLocked("");  // ReadShards removed the file it made
      FailedLocked(step.status());
      continue;
    }
    QueueLocked(Snapshot{*step, path, absl::Now() - start});
  }
}

absl::StatusOr<EvaluationLine> AccuracyEvaluator::Evaluate(const Snapshot& snapshot) {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(const ScratchFile file, ScratchFile::Open(snapshot.path, SnapshotBytes()));
  const absl::StatusOr<Evaluation> evaluation = EvaluateDatasetWith(
      [&](const Batch& piece) { return pass_.Evaluate(file, piece); }, test_, options_.chunk_rows);
  // Idle until the next point, which may be many steps away (and the trainer's own final
  // evaluation can reuse the memory).
  pass_.Release();
  RETURN_IF_ERROR(evaluation.status());
  const absl::Duration took = absl::Now() - start + snapshot.read_time;
  ASSIGN_OR_RETURN(const StepFacts facts, FactsOf(snapshot.completed));
  EvaluationLine point;
  point.step = snapshot.completed;
  point.seconds = facts.seconds;
  point.loss = facts.loss;
  point.sent_bytes = facts.sent_bytes;
  point.test_accuracy = evaluation->accuracy;
  point.test_loss = evaluation->mean_loss;
  point.eval_seconds = absl::ToDoubleSeconds(took);
  return point;
}

absl::StatusOr<int64_t> AccuracyEvaluator::ReadShards(int64_t completed, const ShardReader& reader,
                                                      const std::string& path) {
  ASSIGN_OR_RETURN(const ScratchFile file, ScratchFile::Create(path, SnapshotBytes()));
  const ValuesWriter write = [&file](uint64_t offset, absl::string_view bytes) {
    return file.Write(offset * sizeof(float), bytes);
  };
  absl::Status last;
  for (int attempt = 0; attempt < options_.read_attempts; ++attempt) {
    absl::StatusOr<uint64_t> step = reader(pass_.spec().parameter_count(), write);
    if (step.ok()) return static_cast<int64_t>(*step);
    last = step.status();
    // Only a read that straddled a step is worth repeating at once.
    if (last.code() != absl::StatusCode::kAborted) break;
  }
  std::remove(path.c_str());
  return Annotate(last, absl::StrCat("reading the shards' parameters after step ", completed));
}

absl::StatusOr<AccuracyEvaluator::StepFacts> AccuracyEvaluator::FactsOf(int64_t step) {
  absl::MutexLock lock(&mu_);
  // The initial parameters: before any step, so before any gradient was sent.
  if (step == 0) return StepFacts{0, 0, 0};
  auto reported = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || steps_.count(step) > 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&reported), options_.step_report_timeout);
  auto it = steps_.find(step);
  if (it == steps_.end() || !origin_.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the shards held step ", step, " but this worker never reported ending it"));
  }
  return StepFacts{absl::ToDoubleSeconds(it->second.end - *origin_), it->second.loss,
                   it->second.sent_bytes};
}

}  // namespace ringside::worker
