// The content of one job's comparison, computed once and rendered twice (terminal table in
// compare_table.cc, HTML in report_html.cc): the rows of the side-by-side table, which mode won
// and by how much, the cost model's explanation with the job's numbers, and the events.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_COMPARISON_SUMMARY_H_
#define RINGSIDE_CLI_COMPARISON_SUMMARY_H_

#include <string>
#include <vector>

#include "cli/compare_report.h"

namespace ringside::cli {

// One row of the table: a label and a value per mode, or (spans) one value for both modes.
struct TableRow {
  std::string label;
  std::string ring, ps;  // when `spans`, `ring` holds the one value and `ps` is empty
  bool spans = false;
};

enum class Outcome {
  kWinner,     // both completed and one was faster by more than kTieTolerance
  kTie,        // both completed within kTieTolerance of each other
  kUndecided,  // a mode failed or measured no throughput
};
inline constexpr double kTieTolerance = 0.02;

struct Verdict {
  Outcome outcome = Outcome::kUndecided;
  SyncMode winner = SyncMode::kRing;  // meaningful for kWinner
  double ratio = 1;                   // winner's throughput over the loser's (>= 1)
  std::string basis;                  // "samples_per_second" or "step_p50"
  std::string line;                   // one sentence for the table and the report
};

// "784,1024,1024,10 on synthetic:4096, adam, batch 64, 100 steps, seed 1, cpu; 4 workers,
// 2 PS shards".
std::string JobTitle(const JobConfig& config);
std::vector<TableRow> ComparisonRows(const JobComparison& job);
// By samples/s (higher wins); by step time p50 when a mode reports no samples/s.
Verdict DecideWinner(const JobComparison& job);
// The cost model's figures for this job's K, N and S, a sentence per line.
std::vector<std::string> ModelExplanation(const JobComparison& job);
// Failures, lost workers and other events, each prefixed with its mode ("ps: ...").
std::vector<std::string> EventLines(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPARISON_SUMMARY_H_
