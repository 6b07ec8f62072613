// What ringside-worker writes besides its log (worker/worker_daemon.h), each to the file its flag
// names (empty: not written): one line per completed step (--trace_file, appended), one line per
// test evaluation (--eval_file, appended), the timeline of every step's phases and regroup
// (--timeline_file, Chrome trace JSON rewritten atomically at start, every few seconds, when the
// job is done and at exit), and once the job is done its final parameters (--params_out) and its
// result (--result_file), both atomically.
//
// Open() opens or writes every file at once, so a path that cannot be written fails the start,
// naming its flag. Thread-compatible: the trace sink runs on the training thread and the
// evaluation sink on the evaluator's (worker/elastic_training.h); the trainer must not outlive
// this object.
#ifndef RINGSIDE_WORKER_WORKER_OUTPUTS_H_
#define RINGSIDE_WORKER_WORKER_OUTPUTS_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/accuracy_evaluator.h"
#include "worker/elastic_training.h"
#include "worker/timeline.h"

namespace ringside::worker {

// The files, by flag; each empty path: not written.
struct WorkerOutputs {
  std::string result_file;  // common/cluster_files.h's TrainResultFile
  std::string params_out;   // final parameters, raw float32
  std::string trace_file;   // common/cluster_files.h's StepTraceLine, one per completed step
  // While rank 0, common/cluster_files.h's EvaluationLine, every `training.eval_every` steps,
  // on data with a test set.
  std::string eval_file;
  std::string timeline_file;         // worker/timeline.h
  int64_t timeline_capacity = 4096;  // events kept (4 per step); older ones are dropped
  // {port, metrics_port, address} once serving (elastic: once registered), atomically; the
  // daemon writes it (common/cluster_files.h's ReadyFile).
  std::string ready_file;
};

class WorkerOutputFiles {
 public:
  // `rank` names the timeline's process until a result says otherwise. INVALID_ARGUMENT naming
  // the flag: a file that cannot be opened or written, a --timeline_capacity outside [4, 10^6].
  static absl::StatusOr<std::unique_ptr<WorkerOutputFiles>> Open(const WorkerOutputs& outputs,
                                                                 int rank);
  ~WorkerOutputFiles();

  // For ElasticOptions::timeline; null without --timeline_file.
  Timeline* timeline();
  // For ElasticOptions::evaluations; null without --eval_file.
  AccuracyEvaluator::Sink EvaluationSink();
  // For the trainer's step trace: the trace line, and the timeline when it is due; null without
  // --trace_file and --timeline_file. A timeline that cannot be written is logged on `log`.
  StepTraceSink TraceSink(std::ostream& log);

  // The job is done: the whole job's timeline as `rank`, before the result file, so whoever
  // waits for results finds it. Errors name --timeline_file.
  absl::Status WriteTimeline(int rank);
  // The final parameters, then the result file (`metrics_port` in it).
  absl::Status WriteResult(const ElasticResult& result, int metrics_port);
  // At exit, the timeline once more (regroups after the job); a failure is only logged.
  void WriteTimelineAtExit(std::ostream& log);

 private:
  class TimelineFile;
  explicit WorkerOutputFiles(const WorkerOutputs& outputs);

  const WorkerOutputs outputs_;
  std::ofstream trace_;
  std::unique_ptr<TimelineFile> timeline_;
  std::ofstream evaluations_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_WORKER_OUTPUTS_H_
