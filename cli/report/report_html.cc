#include "cli/report/report_html.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/explanations.h"
#include "cli/report/format_units.h"
#include "cli/report/key_figures.h"
#include "cli/report/report_charts.h"
#include "cli/report/variant_summary.h"
#include "cli/report/verdict.h"
#include "cli/scaling_sweep.h"
#include "common/file_util.h"

namespace ringside::cli {
namespace {

// Inline on purpose: the page must open from a file with no network.
constexpr char kStyle[] = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; margin: 24px;
       max-width: 1280px; line-height: 1.4; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 6px; border-top: 1px solid #ccc; padding-top: 16px; }
.lede, .config { color: #555; margin: 0 0 12px; }
.verdict { font-size: 16px; font-weight: bold; margin: 8px 0; }
.events { background: #fff4e5; border-left: 4px solid #d62728; padding: 8px 12px 8px 28px; }
.events li { margin: 2px 0; }
table.comparison { border-collapse: collapse; margin: 12px 0; font-size: 14px; }
table.comparison th, table.comparison td { border: 1px solid #ccc; padding: 4px 10px;
       text-align: left; vertical-align: top; }
table.comparison th.ring { border-bottom: 3px solid #1f77b4; }
table.comparison th.ps { border-bottom: 3px solid #ff7f0e; }
table.comparison td.label { color: #444; white-space: pre; }
table.comparison tr.key td { background: #fff6d5; font-weight: bold; }
table.key-figures { border-collapse: collapse; margin: 8px 0 12px; font-size: 15px;
       background: #fff6d5; border: 2px solid #e0b000; }
table.key-figures caption { text-align: left; font-weight: bold; padding: 0 0 4px; }
table.key-figures th, table.key-figures td { padding: 4px 12px; text-align: left;
       border-bottom: 1px solid #eadca0; }
table.key-figures td.value { font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 16px; margin: 12px 0; }
figure { margin: 0; border: 1px solid #ddd; padding: 8px; background: #fff; }
.model p { margin: 4px 0; }
)css";

std::string ComparisonTableHtml(const JobComparison& job) {
  std::string html =
      "<table class=\"comparison\">\n<thead><tr><th></th><th class=\"ring\">ring</th>"
      "<th class=\"ps\">ps</th></tr></thead>\n<tbody>\n";
  for (const TableRow& row : ComparisonRows(job)) {
    absl::StrAppend(&html, row.key ? "<tr class=\"key\">" : "<tr>", "<td class=\"label\">",
                    HtmlEscape(row.label), "</td>");
    if (row.spans) {
      absl::StrAppend(&html, "<td colspan=\"2\">", HtmlEscape(row.ring), "</td>");
    } else {
      absl::StrAppend(&html, "<td>", HtmlEscape(row.ring), "</td><td>", HtmlEscape(row.ps),
                      "</td>");
    }
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>\n";
}

// The verdict in numbers, for the first screen: the rows the comparison turns on, as the table
// below shows (and marks) them, with how many times one mode's figure is the other's.
std::string KeyFiguresHtml(const JobComparison& job) {
  std::string html =
      "<table class=\"key-figures\">\n<caption>The verdict in numbers</caption>\n<thead><tr>"
      "<th></th><th class=\"ring\">ring</th><th class=\"ps\">ps</th><th>ratio</th></tr></thead>"
      "\n<tbody>\n";
  for (const KeyFigure& figure : KeyFigures(job)) {
    absl::StrAppend(&html, "<tr><th>", HtmlEscape(figure.label), "</th><td class=\"value\">",
                    HtmlEscape(figure.ring), "</td><td class=\"value\">", HtmlEscape(figure.ps),
                    "</td><td>", HtmlEscape(figure.ratio), "</td></tr>\n");
  }
  return html + "</tbody>\n</table>\n";
}

// --ps_variants, --compression_variants: every run, a row each, and which PS variant was first.
std::string VariantTableHtml(const JobComparison& job) {
  if (job.ps_variants.empty() && job.compression_variants.empty()) return "";
  const std::vector<std::vector<std::string>> table = VariantTable(job);
  std::string html = absl::StrCat("<h3>", HtmlEscape(VariantTableTitle(job)),
                                  "</h3>\n<table class=\"comparison\">\n<thead><tr>");
  for (const std::string& cell : table.front())
    absl::StrAppend(&html, "<th>", HtmlEscape(cell), "</th>");
  html += "</tr></thead>\n<tbody>\n";
  for (size_t r = 1; r < table.size(); ++r) {
    html += "<tr>";
    for (const std::string& cell : table[r])
      absl::StrAppend(&html, "<td>", HtmlEscape(cell), "</td>");
    html += "</tr>\n";
  }
  html += "</tbody>\n</table>\n";
  if (job.ps_variants.empty()) return html;
  return absl::StrCat(html, "<p class=\"verdict\">", HtmlEscape(DecideBestVariant(job).line),
                      "</p>\n");
}

std::string Figure(const std::string& svg) { return absl::StrCat("<figure>", svg, "</figure>\n"); }

// A sweep's charts (one per mode, and per further shard count) and what they show.
std::string ScalingSection(const JobComparison& job, const std::string& suffix) {
  if (job.ring.scaling.empty() && job.ps.scaling.empty()) return "";
  std::string html = "<h3>Scaling</h3>\n<div class=\"model\">\n";
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    for (const std::string& line :
         ScalingExplanation(*mode, static_cast<int>(std::thread::hardware_concurrency()))) {
      absl::StrAppend(&html, "<p>", HtmlEscape(line), "</p>\n");
    }
  }
  html += "</div>\n<div class=\"charts\">\n";
  html += Figure(ScalingChart(job.ring, job.config.ps_shards, "scaling-ring-" + suffix));
  std::vector<int> shards;
  for (const ScalingPoint& p : job.ps.scaling) {
    if (std::find(shards.begin(), shards.end(), p.ps_shards) == shards.end()) {
      shards.push_back(p.ps_shards);
    }
  }
  for (int s : shards) {
    html += Figure(ScalingChart(job.ps, s, absl::StrCat("scaling-ps-s", s, "-", suffix)));
  }
  return html + "</div>\n";
}

// Test accuracy against time and bytes sent, and what the time and bytes to target mean (data
// with a test set only).
std::string AccuracySection(const JobComparison& job, const std::string& suffix) {
  const std::vector<std::string> lines = AccuracyExplanation(job);
  if (lines.empty()) return "";
  std::string html = "<h3>Test accuracy and time to target</h3>\n<div class=\"model\">\n";
  for (const std::string& line : lines) absl::StrAppend(&html, "<p>", HtmlEscape(line), "</p>\n");
  html += "</div>\n<div class=\"charts\">\n";
  html += Figure(AccuracyOverTimeChart(job, "accuracy-time-" + suffix));
  html += Figure(AccuracyOverBytesChart(job, "accuracy-bytes-" + suffix));
  return html + "</div>\n";
}

std::string JobSection(const JobComparison& job, size_t index) {
  const std::string suffix = absl::StrCat("job", index);
  std::string html =
      absl::StrCat("<section class=\"job\" id=\"", suffix, "\">\n<h2>Job ", index + 1, ": ",
                   HtmlEscape(job.config.model), " on ", HtmlEscape(job.config.data),
                   "</h2>\n<p class=\"config\">", HtmlEscape(JobTitle(job.config)), "</p>\n");
  absl::StrAppend(&html, "<p class=\"verdict\">", HtmlEscape(DecideWinner(job).line), "</p>\n");
  html += KeyFiguresHtml(job);
  const std::vector<std::string> events = EventLines(job);
  if (!events.empty()) {
    html += "<ul class=\"events\">\n";
    for (const std::string& event : events) {
      absl::StrAppend(&html, "<li>", HtmlEscape(event), "</li>\n");
    }
    html += "</ul>\n";
  }
  html += ComparisonTableHtml(job);
  html += VariantTableHtml(job);
  html += "<div class=\"model\">\n";
  for (const std::string& line : ModelExplanation(job)) {
    absl::StrAppend(&html, "<p>", HtmlEscape(line), "</p>\n");
  }
  html += "</div>\n<div class=\"charts\">\n";
  html += Figure(LinkBytesChart(job.ring, "links-ring-" + suffix));
  html += Figure(LinkBytesChart(job.ps, "links-ps-" + suffix));
  html += Figure(PhaseChart(job, "phases-" + suffix));
  html += Figure(StepTimeChart(job, "step-time-" + suffix));
  html += Figure(ModelCurveChart(job, ModelQuantity::kPerWorker, "model-worker-" + suffix));
  html += Figure(ModelCurveChart(job, ModelQuantity::kBusiestNode, "model-busiest-" + suffix));
  html += Figure(LossOverTimeChart(job, "loss-time-" + suffix));
  html += "</div>\n";
  html += AccuracySection(job, suffix);
  html += ScalingSection(job, suffix);
  return html + "</section>\n";
}

}  // namespace

std::string RenderHtmlReport(const CompareReport& report) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>Ringside compare: parameter server vs ring allreduce</title>\n<style>",
      kStyle,
      "</style>\n</head>\n<body>\n<h1>Ringside compare: parameter server vs ring "
      "allreduce</h1>\n<p class=\"lede\">The same jobs trained in both modes on a local cluster; "
      "bytes are payload per synchronous step as counted on every link, next to the analytic "
      "cost model.</p>\n");
  if (report.jobs.empty()) html += "<p>No jobs were run.</p>\n";
  for (size_t i = 0; i < report.jobs.size(); ++i) html += JobSection(report.jobs[i], i);
  return html + "</body>\n</html>\n";
}

absl::Status WriteHtmlReportFile(const CompareReport& report, const std::string& path) {
  return WriteFileAtomically(path, RenderHtmlReport(report));
}

}  // namespace ringside::cli
