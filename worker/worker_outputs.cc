#include "worker/worker_outputs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/checksum.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::worker {
namespace {

// Opens `path` for appending; INVALID_ARGUMENT naming `flag` when it cannot be.
absl::Status OpenForAppending(const std::string& path, absl::string_view flag, std::ofstream& out) {
  out.open(path, std::ios::app);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot open ", path, " for appending"));
  }
  return absl::OkStatus();
}

TrainResultFile ResultFileOf(const ElasticResult& result, int metrics_port) {
  const TrainingResult& training = result.training;
  TrainResultFile file;
  file.rank = result.slot.rank;
  file.world = result.slot.world;
  file.generation = result.generation;
  file.mode = std::string(SyncModeName(result.mode));
  file.steps = training.steps;
  file.parameters = static_cast<int64_t>(training.parameters.size());
  file.final_loss = training.final_eval.mean_loss;
  file.accuracy = training.final_eval.accuracy;
  file.checksum = ChecksumHex(training.parameters);
  file.metrics_port = metrics_port;
  return file;
}

}  // namespace

// The worker's timeline and where it goes; written on the training thread only.
class WorkerOutputFiles::TimelineFile {
 public:
  static constexpr absl::Duration kEvery = absl::Seconds(2);

  TimelineFile(const WorkerOutputs& outputs, int rank)
      : path_(outputs.timeline_file),
        timeline_(static_cast<size_t>(outputs.timeline_capacity)),
        rank_(rank) {}
  Timeline* timeline() { return &timeline_; }
  absl::Status Write() {
    last_ = absl::Now();
    return WriteWorkerTimeline(timeline_, rank_, path_);
  }
  void WriteIfDue(int rank, std::ostream& log) {
    rank_ = rank;
    if (absl::Now() - last_ < kEvery) return;
    if (absl::Status status = Write(); !status.ok()) {
      log << WorkerName(rank) << ": --timeline_file not written: " << status << "\n";
    }
  }
  void set_rank(int rank) { rank_ = rank; }

 private:
  const std::string path_;
  Timeline timeline_;
  int rank_;
  absl::Time last_ = absl::InfinitePast();
};

WorkerOutputFiles::WorkerOutputFiles(const WorkerOutputs& outputs) : outputs_(outputs) {}
WorkerOutputFiles::~WorkerOutputFiles() = default;

absl::StatusOr<std::unique_ptr<WorkerOutputFiles>> WorkerOutputFiles::Open(
    const WorkerOutputs& outputs, int rank) {
  auto files = std::unique_ptr<WorkerOutputFiles>(new WorkerOutputFiles(outputs));
  if (!outputs.trace_file.empty()) {
    RETURN_IF_ERROR(OpenForAppending(outputs.trace_file, "--trace_file", files->trace_));
  }
  if (!outputs.timeline_file.empty()) {
    if (outputs.timeline_capacity < 4 || outputs.timeline_capacity > 1'000'000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--timeline_capacity=", outputs.timeline_capacity,
                       ": keep between 4 (one step) and 1000000 events"));
    }
    files->timeline_ = std::make_unique<TimelineFile>(outputs, rank);
    RETURN_IF_ERROR(Annotate(files->timeline_->Write(), "--timeline_file"));
  }
  if (!outputs.eval_file.empty()) {
    RETURN_IF_ERROR(OpenForAppending(outputs.eval_file, "--eval_file", files->evaluations_));
  }
  return files;
}

Timeline* WorkerOutputFiles::timeline() {
  return timeline_ != nullptr ? timeline_->timeline() : nullptr;
}

AccuracyEvaluator::Sink WorkerOutputFiles::EvaluationSink() {
  if (!evaluations_.is_open()) return nullptr;
  return [this](const EvaluationLine& point) {
    evaluations_ << EvaluationLineText(point) << "\n";
    evaluations_.flush();
  };
}

StepTraceSink WorkerOutputFiles::TraceSink(std::ostream& log) {
  std::ofstream* out = trace_.is_open() ? &trace_ : nullptr;
  TimelineFile* timeline = timeline_.get();
  if (out == nullptr && timeline == nullptr) return nullptr;
  return [out, timeline, &log](const StepTrace& step) {
    if (timeline != nullptr) timeline->WriteIfDue(step.slot.rank, log);
    if (out == nullptr) return;
    *out << StepTraceLineText(
                {step.step, step.generation, std::string(SyncModeName(step.mode)), step.slot.rank,
                 step.slot.world, step.loss, step.seconds, ChecksumHex(step.parameters),
                 absl::ToDoubleSeconds(step.timing.compute),
                 absl::ToDoubleSeconds(step.timing.sync), absl::ToDoubleSeconds(step.timing.update),
                 absl::ToDoubleSeconds(step.timing.concurrent()),
                 absl::ToDoubleSeconds(step.end - absl::UnixEpoch())})
         << "\n";
    out->flush();
  };
}

absl::Status WorkerOutputFiles::WriteTimeline(int rank) {
  if (timeline_ == nullptr) return absl::OkStatus();
  timeline_->set_rank(rank);
  return Annotate(timeline_->Write(), "--timeline_file");
}

absl::Status WorkerOutputFiles::WriteResult(const ElasticResult& result, int metrics_port) {
  const std::vector<float>& parameters = result.training.parameters;
  if (!outputs_.params_out.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(
        outputs_.params_out, absl::string_view(reinterpret_cast<const char*>(parameters.data()),
                                               parameters.size() * sizeof(float))));
  }
  if (outputs_.result_file.empty()) return absl::OkStatus();
  return WriteFileAtomically(outputs_.result_file,
                             TrainResultText(ResultFileOf(result, metrics_port)));
}

void WorkerOutputFiles::WriteTimelineAtExit(std::ostream& log) {
  if (timeline_ == nullptr) return;
  if (absl::Status written = timeline_->Write(); !written.ok()) {
    log << "worker: --timeline_file not written at exit: " << written << "\n";
  }
}

}  // namespace ringside::worker
