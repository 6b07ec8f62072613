// The content of one job's comparison, computed once and rendered twice (terminal table in
// compare_table.cc, HTML in report_html.cc): the job's title and the rows of the side-by-side
// table. Which mode won is in cli/report/verdict.h, the prose beside the table in
// cli/report/explanations.h. Pure; thread-safe.
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

// "784,1024,1024,10 on synthetic:4096, adam, batch 64, 100 steps, seed 1, cpu; 4 workers,
// 2 PS shards".
std::string JobTitle(const JobConfig& config);
std::vector<TableRow> ComparisonRows(const JobComparison& job);
// "75%": the job's target accuracy as the table and report name it.
std::string TargetText(const JobConfig& config);
// "20mbit", or with --slow_link "20mbit (worker-3: 5mbit)": the rates the lab's bound is at.
std::string LinkRatesText(const JobConfig& config);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_COMPARISON_SUMMARY_H_
