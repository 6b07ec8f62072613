// `ringside compare --report FILE.html`: one self-contained page (inline CSS, inline SVG, no
// scripts, fonts or anything else fetched) that shows every job's verdict, the verdict in
// numbers (cli/report/key_figures.h; on the first screen, its rows marked in the table below),
// events, comparison table and charts (cli/report/report_charts.h).
//
// Chart ids, per job index i (stable; tests and readers link to them):
//   links-ring-job<i>, links-ps-job<i>   bytes per link, measured vs model
//   phases-job<i>                        step time by phase, both modes
//   model-worker-job<i>                  model bytes per worker per step, N = 2..1024
//   model-busiest-job<i>                 model bytes into the busiest node per step
// Every chart is <svg class="chart">; its data elements have class "mark".
//
// Pure; thread-safe. Errors: only the file writer fails (WriteFileAtomically's status).
#ifndef RINGSIDE_CLI_REPORT_REPORT_HTML_H_
#define RINGSIDE_CLI_REPORT_REPORT_HTML_H_

#include <string>

#include "absl/status/status.h"
#include "cli/report/compare_report.h"

namespace ringside::cli {

std::string RenderHtmlReport(const CompareReport& report);

// RenderHtmlReport(report), written atomically.
absl::Status WriteHtmlReportFile(const CompareReport& report, const std::string& path);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_REPORT_HTML_H_
