// The content of one job's comparison, computed once and rendered twice (terminal table in
// compare_table.cc, HTML in report_html.cc): the rows of the side-by-side table, which mode won
// and by how much, the cost model's explanation with the job's numbers, and the events.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_COMPARISON_SUMMARY_H_
#define RINGSIDE_CLI_REPORT_COMPARISON_SUMMARY_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli {

// One row of the table: a label and a value per mode, or (spans) one value for both modes.
struct TableRow {
  std::string label;
  std::string ring, ps;  // when `spans`, `ring` holds the one value and `ps` is empty
  bool spans = false;
  // One of the key figures (cli/report/key_figures.h), whose cells it shows: the HTML table
  // highlights it.
  bool key = false;
};

enum class Outcome {
  // both completed and one was faster by more than kTieTolerance: reached the target test
  // accuracy sooner where both reached it, else had the higher throughput
  kWinner,
  kTie,        // both completed within kTieTolerance of each other
  kUndecided,  // a mode failed or measured no throughput
};
inline constexpr double kTieTolerance = 0.02;

struct Verdict {
  Outcome outcome = Outcome::kUndecided;
  SyncMode winner = SyncMode::kRing;  // meaningful for kWinner
  // The winner's throughput over the loser's, or the loser's time to target over the winner's
  // (>= 1).
  double ratio = 1;
  std::string basis;  // "seconds_to_target", "samples_per_second" or "step_p50"
  std::string line;   // one sentence for the table and the report
};

// "784,1024,1024,10 on synthetic:4096, adam, batch 64, 100 steps, seed 1, cpu; 4 workers,
// 2 PS shards".
std::string JobTitle(const JobConfig& config);
std::vector<TableRow> ComparisonRows(const JobComparison& job);
// By the time to the target test accuracy when both modes reached it (sooner wins); else by
// samples/s (higher wins), or step time p50 when a mode reports no samples/s, saying which modes
// reached the target where the data has a test set.
Verdict DecideWinner(const JobComparison& job);
// "75%": the job's target accuracy as the table and report name it.
std::string TargetText(const JobConfig& config);
// How test accuracy was measured and what the time to target means, with this job's figures,
// a sentence per line; empty for data without a held-out test set.
std::vector<std::string> AccuracyExplanation(const JobComparison& job);
// The cost model's figures for this job's K, N and S, a sentence per line.
std::vector<std::string> ModelExplanation(const JobComparison& job);
// Failures, lost workers and other events, each prefixed with its mode ("ps: ...").
std::vector<std::string> EventLines(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_COMPARISON_SUMMARY_H_
