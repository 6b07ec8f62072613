// The prose beside one job's side-by-side table, a sentence per line: how test accuracy was
// measured, the cost model with the job's numbers, and the runs' events. Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_EXPLANATIONS_H_
#define RINGSIDE_CLI_REPORT_EXPLANATIONS_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli {

// How test accuracy was measured and what the time to target means, with this job's figures,
// a sentence per line; empty for data without a held-out test set.
std::vector<std::string> AccuracyExplanation(const JobComparison& job);
// The cost model's figures for this job's K, N and S, a sentence per line.
std::vector<std::string> ModelExplanation(const JobComparison& job);
// Failures, lost workers and other events, each prefixed with its mode ("ps: ...").
std::vector<std::string> EventLines(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_EXPLANATIONS_H_
