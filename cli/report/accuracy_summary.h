// Test accuracy against wall-clock time and bytes sent, and the time and bytes to a target
// accuracy, from rank 0's
// evaluations (common/cluster_files.h's EvaluationLine, one file per worker). What a user
// comparing the modes asks: which one trains the model to a given accuracy soonest.
//
// Defined on what was measured: the time to target is when the step ended whose parameters were
// the first *evaluated* at or above the target, counted from the cluster's first step. It is
// resolved to the evaluation interval (--eval_every), and a single evaluation is noisy by a few
// points at small batches: hence also the mean of the last few evaluations.
// Pure but for ReadAccuracyOverTime, which reads files; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_ACCURACY_SUMMARY_H_
#define RINGSIDE_CLI_REPORT_ACCURACY_SUMMARY_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "common/cluster_files.h"

namespace ringside::cli {

inline constexpr int kRecentEvaluations = 5;

// Every worker's evaluations merged by step, in step order: the first file (in the order given)
// that has a step wins, since a worker evaluates only while rank 0, and a new rank 0 only takes
// over from a lost one.
std::vector<AccuracyPoint> MergeEvaluations(const std::vector<Evaluations>& files);
// The mean of the points' eval_seconds over every file (0 for none).
double MeanEvaluationSeconds(const std::vector<Evaluations>& files);

// Fills `mode`'s test_accuracy, test_accuracy_recent (over the last kRecentEvaluations points),
// recent_evaluations and time, steps and bytes to `target` from its accuracy_over_time; all
// unset when it has no points.
void SummariseAccuracy(double target, ModeReport& mode);

// The workers' evaluation files at `paths` (missing ones read as empty) into `mode`'s
// accuracy_over_time and eval_seconds_mean, then SummariseAccuracy. Unreadable lines (a line cut
// short by a kill) are left out and reported in `mode.events`.
void ReadAccuracyOverTime(const std::vector<std::string>& paths, double target, ModeReport& mode);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_ACCURACY_SUMMARY_H_
