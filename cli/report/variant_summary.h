// `ringside compare --ps_variants` and `--compression_variants`: the ring and every
// parameter-server variant or compressed run of one job side by side (issue 28's question: with one
// slow worker, which reaches my accuracy first?), as a table's cells and a verdict, computed once
// and rendered by the terminal table (compare_table.cc), the JSON (compare_json.cc) and the HTML
// report (report_html.cc). Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_VARIANT_SUMMARY_H_
#define RINGSIDE_CLI_REPORT_VARIANT_SUMMARY_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli {

// The variants table: a header row, then one row per run of JobRuns (the ring first), each
// with its time and bytes to the target.
std::vector<std::vector<std::string>> VariantTable(const JobComparison& job);
// Its heading: "The ring and every PS variant (--ps_variants)", "Every run, plain and
// compressed (--compression_variants)", or both flags named.
std::string VariantTableTitle(const JobComparison& job);

struct VariantVerdict {
  std::string best;  // RunName of the PS variant first at the target; empty: none reached it
  std::optional<double> seconds_to_target;
  // The ring's and the synchronous PS variant's time to target ÷ the best's (> 1: the best was
  // sooner); unset where that run did not reach the target or was not run.
  std::optional<double> over_ring, over_sync;
  // The best's time to target ÷ the "sync/no_straggler" variant's (1.0: the slow worker cost the
  // best variant nothing); unset where that was not run or did not reach the target. Variants
  // without the straggler are references and never the best.
  std::optional<double> best_over_sync_without_straggler;
  std::string line;  // one sentence for the table and the report
};
VariantVerdict DecideBestVariant(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_VARIANT_SUMMARY_H_
