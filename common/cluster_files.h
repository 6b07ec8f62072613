// The files one Ringside process writes for another (a launcher, `ringside compare`, tests):
// one struct, one writer and one reader per format, so no reader is written twice and none
// throws. Every reader returns INVALID_ARGUMENT naming the first missing or mistyped field (a
// file cut short by a killed process reads as such), never an exception.
//
//   ready file    every daemon, once serving: {"port", "metrics_port", "address"?,
//                 "range_begin"?, "range_end"?}
//   step trace    elastic workers, one JSON line per completed step
//   evaluations   rank 0's test evaluator, one JSON line per evaluation
//   (worker/accuracy_evaluator.h) result file   workers, when their job is done (the train job's
//   fields; benchmark jobs write
//                 common/rank_result.h's format)
#ifndef RINGSIDE_COMMON_CLUSTER_FILES_H_
#define RINGSIDE_COMMON_CLUSTER_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside {

struct ReadyFile {
  int port = 0;
  int metrics_port = 0;
  std::string address;  // elastic members: the address others dial; may be empty
  // Static shards: the parameter range [range_begin, range_end) they hold. Both 0 otherwise.
  int64_t range_begin = 0;
  int64_t range_end = 0;
};
std::string ReadyFileText(const ReadyFile& ready);
absl::StatusOr<ReadyFile> ParseReadyFile(absl::string_view text);

struct StepTraceLine {
  int64_t step = 0;
  uint64_t generation = 0;
  std::string mode;
  int rank = 0;
  int world = 0;
  double loss = 0;
  double seconds = 0;
  std::string checksum;  // ChecksumHex (common/checksum.h) of the parameters after the step
  // The step's phases as `ringside_step_seconds` times them (0 in traces written before they
  // were recorded): the lab compares every step's sync with the bandwidth bound.
  double compute_seconds = 0, sync_seconds = 0, update_seconds = 0;
  // How long of the step its sync ran at the same time as its compute (--bucket_bytes:
  // StepTiming::concurrent); 0 without overlap, and in traces written before it existed.
  double overlap_seconds = 0;
  // When the step ended, seconds since the Unix epoch (`ringside compare`'s loss over time).
  // Optional in the file (0: not recorded, as in traces written before it existed).
  double unix_seconds = 0;
};
std::string StepTraceLineText(const StepTraceLine& line);  // one line, no newline
absl::StatusOr<StepTraceLine> ParseStepTraceLine(absl::string_view text);

// A whole trace file; lines that do not parse (the last one, cut short by a kill) are counted
// in `unreadable` and skipped. A missing file reads as no lines.
struct StepTrace {
  std::vector<StepTraceLine> lines;
  int unreadable = 0;
};
StepTrace ReadStepTrace(const std::string& path);

// One evaluation of the job's parameters on the held-out test set.
struct EvaluationLine {
  int64_t step = 0;    // steps completed when the parameters were taken (0: the initial ones)
  double seconds = 0;  // when that step ended, seconds since the worker's first step began
  double test_accuracy = 0, test_loss = 0;  // on the whole test set
  double loss = 0;          // the training loss of that step (the worker's batch); 0 at step 0
  double eval_seconds = 0;  // the evaluation's own time: reading the parameters, forward passes
  // The payload bytes the evaluating worker had sent on its links (ringside_link_bytes_total,
  // summed over the job) when that step ended; -1: not recorded (optional in the file).
  int64_t sent_bytes = -1;
};
std::string EvaluationLineText(const EvaluationLine& line);  // one line, no newline
absl::StatusOr<EvaluationLine> ParseEvaluationLine(absl::string_view text);

// A whole evaluations file, read like a step trace (unreadable lines counted and skipped, a
// missing file: no lines).
struct Evaluations {
  std::vector<EvaluationLine> lines;
  int unreadable = 0;
};
Evaluations ReadEvaluations(const std::string& path);

struct TrainResultFile {
  int rank = 0;
  int world = 0;
  uint64_t generation = 0;
  std::string mode;
  int64_t steps = 0;
  int64_t parameters = 0;
  double final_loss = 0;
  double accuracy = 0;
  std::string checksum;
  int metrics_port = 0;
};
std::string TrainResultText(const TrainResultFile& result);
absl::StatusOr<TrainResultFile> ParseTrainResult(absl::string_view text);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_CLUSTER_FILES_H_
