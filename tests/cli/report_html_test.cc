// The HTML report as text: self-contained (nothing fetched), every chart present with marks,
// the table's content, events, and text escaped.
#include "cli/report/report_html.h"

#include <cmath>
#include <string>

#include "cli/report/repeats.h"
#include "cli/report/report_charts.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "tests/cli/html_probe.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using testing::ChartIds;
using testing::CountMarks;
using testing::CountOccurrences;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SvgById;

TEST(ReportHtmlTest, IsOneSelfContainedPage) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("<meta charset=\"utf-8\">"));
  EXPECT_THAT(html, HasSubstr("</html>"));
  // The only URLs are the SVG namespace names, one per chart (7 per job).
  const std::string xmlns = "xmlns=\"http://www.w3.org/2000/svg\"";
  EXPECT_EQ(CountOccurrences(html, xmlns), 14);
  EXPECT_EQ(CountOccurrences(html, "http://"), 14);
  EXPECT_EQ(CountOccurrences(html, "https://"), 0);
  for (const char* fetcher : {"<script", "<link", "<img", "<iframe", "@import", "url(", "src="}) {
    EXPECT_THAT(html, Not(HasSubstr(fetcher))) << fetcher;
  }
}

TEST(ReportHtmlTest, EveryChartOfEveryJobHasMarks) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  for (int job = 0; job < 2; ++job) {
    for (const std::string& id : ChartIds(job)) {
      const std::string svg = SvgById(html, id);
      ASSERT_FALSE(svg.empty()) << id;
      EXPECT_GT(CountMarks(svg, "rect") + CountMarks(svg, "polyline") + CountMarks(svg, "circle"),
                0)
          << id;
    }
  }
}

TEST(ReportHtmlTest, LinkChartsDrawEveryLinkMeasuredAndExpected) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  const std::string ring = SvgById(html, "links-ring-job0");
  EXPECT_EQ(CountMarks(ring, "rect", "measured ring"), 4);
  EXPECT_EQ(CountMarks(ring, "rect", "expected ring"), 4);
  EXPECT_THAT(ring, HasSubstr("worker-3 \u2192 worker-0"));
  EXPECT_THAT(ring, HasSubstr("10.7 MiB"));
  const std::string ps = SvgById(html, "links-ps-job0");
  EXPECT_EQ(CountMarks(ps, "rect", "measured ps"), 16);
  EXPECT_EQ(CountMarks(ps, "rect", "expected ps"), 16);
  EXPECT_THAT(ps, HasSubstr("ps-1 \u2192 worker-3"));
}

TEST(ReportHtmlTest, PhaseChartStacksThreePhasesPerMode) {
  const std::string svg = SvgById(RenderHtmlReport(testing::SampleReport()), "phases-job0");
  for (const char* phase : {"compute", "sync", "update"}) {
    EXPECT_EQ(CountMarks(svg, "rect", std::string("phase ") + phase + " ring"), 1) << phase;
    EXPECT_EQ(CountMarks(svg, "rect", std::string("phase ") + phase + " ps"), 1) << phase;
  }
  EXPECT_THAT(svg, HasSubstr("210 ms, sync 57.1%"));
}

TEST(ReportHtmlTest, ModelChartsDrawBothCurvesAndTheMeasuredPoints) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  for (const char* id : {"model-worker-job0", "model-busiest-job0"}) {
    const std::string svg = SvgById(html, id);
    EXPECT_EQ(CountMarks(svg, "polyline", "model ring"), 1) << id;
    EXPECT_EQ(CountMarks(svg, "polyline", "model ps"), 1) << id;
    EXPECT_EQ(CountMarks(svg, "circle", "measured ring"), 1) << id;
    EXPECT_EQ(CountMarks(svg, "circle", "measured ps"), 1) << id;
    EXPECT_THAT(svg, HasSubstr(">1024</text>")) << "the N axis reaches 1024";
    EXPECT_THAT(svg, HasSubstr("this run: N = 4"));
  }
  EXPECT_THAT(SvgById(html, "model-busiest-job0"),
              HasSubstr("ps measured at N = 4: 14.2 MiB (model 14.2 MiB)"));
}

TEST(ReportHtmlTest, CarriesTheTableVerdictModelAndEvents) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  EXPECT_THAT(html, HasSubstr("<table class=\"comparison\">"));
  EXPECT_THAT(html, HasSubstr("<td>10.7 MiB</td><td>7.11 MiB</td>"));
  EXPECT_THAT(html, HasSubstr("<td>ps-0 (shard ingress)</td>"));
  EXPECT_THAT(html, HasSubstr("Winner: ring, 1.67\u00d7 the step rate of ps (95% interval"));
  EXPECT_THAT(html, HasSubstr("N\u00b7K/S = 4\u00b71,863,690/2"));
  EXPECT_THAT(html, HasSubstr("<ul class=\"events\">"));
  EXPECT_THAT(html, HasSubstr("<li>ring: worker-3 exited (killed by signal 9) at ~step 40"));
  EXPECT_THAT(html, HasSubstr("<td>3 of 4 (1 lost)</td>"));
}

// The point of the comparison is on the first screen: right after the verdict, before the
// events, the 25-row table and any chart, the figures it turns on with their ratios (the ring
// sends 1.5x more per worker, a shard takes 1.33x a ring link), and the same rows, with the same
// cells, marked in the table.
TEST(ReportHtmlTest, TheVerdictInNumbersLeadsEachJobAndMarksItsRowsInTheTable) {
  const std::string html = RenderHtmlReport(testing::SampleReport());
  const size_t job = html.find("<section class=\"job\" id=\"job0\">");
  const size_t verdict = html.find("<p class=\"verdict\">", job);
  const size_t key = html.find("<table class=\"key-figures\">", job);
  const size_t key_end = html.find("</table>", key);
  ASSERT_NE(key, std::string::npos);
  EXPECT_LT(verdict, key);
  for (const char* later : {"<ul class=\"events\">", "<table class=\"comparison\">", "<svg"}) {
    EXPECT_LT(key, html.find(later, job)) << later;
  }
  const std::string figures = html.substr(key, key_end - key);
  EXPECT_THAT(figures, HasSubstr("The verdict in numbers"));
  EXPECT_THAT(figures, HasSubstr("<tr><th>bytes/worker/step</th><td class=\"value\">10.7 MiB</td>"
                                 "<td class=\"value\">7.11 MiB</td><td>ring 1.50\u00d7 ps "
                                 "(model 1.50\u00d7)</td></tr>"));
  EXPECT_THAT(figures, HasSubstr("<tr><th>busiest node&#39;s bytes/step</th><td class=\"value\">"
                                 "10.7 MiB</td><td class=\"value\">14.2 MiB</td><td>ps 1.33\u00d7 "
                                 "ring (model 1.33\u00d7)</td></tr>"));
  EXPECT_THAT(figures, HasSubstr("<td class=\"value\">210 ms</td><td class=\"value\">350 ms</td>"
                                 "<td>ps 1.67\u00d7 ring</td>"));
  // The table marks the same three rows, with the same cells.
  const size_t table = html.find("<table class=\"comparison\">", job);
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(CountOccurrences(rows, "<tr class=\"key\">"), 3);
  EXPECT_THAT(rows, HasSubstr("<tr class=\"key\"><td class=\"label\">bytes/worker/step</td>"
                              "<td>10.7 MiB</td><td>7.11 MiB</td>"));
  EXPECT_THAT(rows, HasSubstr("<tr class=\"key\"><td class=\"label\">  bytes/step</td>"
                              "<td>10.7 MiB</td><td>14.2 MiB</td>"));
  EXPECT_THAT(rows, HasSubstr("<tr class=\"key\"><td class=\"label\">step time p50</td>"
                              "<td>210 ms</td><td>350 ms</td>"));
}

TEST(ReportHtmlTest, TheVerdictInNumbersOfAFailedModeHasNoRatio) {
  CompareReport report = testing::SampleReport();
  report.jobs[0].ps.completed = false;
  const std::string html = RenderHtmlReport(report);
  const size_t key = html.find("<table class=\"key-figures\">");
  const std::string figures = html.substr(key, html.find("</table>", key) - key);
  EXPECT_THAT(figures, Not(HasSubstr("\u00d7")));
  EXPECT_EQ(CountOccurrences(figures, "<td>\u2014</td>"), 3);
}

TEST(ReportHtmlTest, EscapesTextFromTheRun) {
  CompareReport report = testing::SampleReport();
  report.jobs[0].ps.completed = false;
  report.jobs[0].ps.failure = "<script>alert('x')</script> & \"ps-1\" died";
  report.jobs[0].config.model = "<b>model</b>";
  const std::string html = RenderHtmlReport(report);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<b>model")));
  EXPECT_THAT(html,
              HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;ps-1&quot;"));
  EXPECT_THAT(html, HasSubstr("&lt;b&gt;model&lt;/b&gt;"));
}

TEST(ReportHtmlTest, AFailedModeDrawsNoMarksAndSaysSo) {
  CompareReport report = testing::SampleReport();
  report.jobs[0].ps.completed = false;
  report.jobs[0].ps.links.clear();
  const std::string html = RenderHtmlReport(report);
  const std::string ps = SvgById(html, "links-ps-job0");
  ASSERT_FALSE(ps.empty());
  EXPECT_EQ(CountMarks(ps, "rect"), 0);
  EXPECT_THAT(ps, HasSubstr("no data: the run failed"));
  EXPECT_EQ(CountMarks(SvgById(html, "phases-job0"), "rect", "phase sync ps"), 0);
  EXPECT_EQ(CountMarks(SvgById(html, "model-worker-job0"), "circle", "measured ps"), 0);
}

TEST(ReportHtmlTest, UnusableFiguresDrawNothingRatherThanBadCoordinates) {
  CompareReport report = testing::SampleReport();
  report.jobs[0].ring.links[0].bytes_per_step = std::nan("");
  report.jobs[0].ring.links[1].expected_bytes_per_step = -5;
  report.jobs[0].ps.phases.sync = std::nan("");
  const std::string html = RenderHtmlReport(report);
  EXPECT_THAT(html, Not(HasSubstr("\"nan\"")));
  EXPECT_THAT(html, Not(HasSubstr("\"-nan\"")));
  EXPECT_THAT(html, Not(HasSubstr("width=\"-")));
  EXPECT_EQ(CountMarks(SvgById(html, "links-ring-job0"), "rect", "measured ring"), 4);
}

TEST(ReportHtmlTest, WritesTheFile) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("report-html-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const CompareReport report = testing::SampleReport();
  ASSERT_TRUE(WriteHtmlReportFile(report, dir->File("report.html")).ok());
  absl::StatusOr<std::string> text = ReadFileToString(dir->File("report.html"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, RenderHtmlReport(report));
}

// --repeats: the step-time chart draws each repeat's median, the phase chart the step's range
// over the repeats, the accuracy chart the time to target's; the first screen's verdict line
// carries the interval.
TEST(ReportHtmlTest, RepeatsDrawTheirSpreadAndTheVerdictCarriesTheInterval) {
  JobComparison first = testing::FashionMnistJob(), second = first, third = first;
  second.ring.step_p50 = 0.200;
  second.ring.phases.sync = 0.110;
  third.ring.step_p50 = 0.230;
  third.ring.phases.sync = 0.140;
  third.ring.seconds_to_target = 13.5;
  const JobComparison job = MergeRounds({first, second, third});
  const std::string steps = StepTimeChart(job, "steps");
  EXPECT_EQ(CountOccurrences(steps, "class=\"mark repeat ring\""), 3);
  EXPECT_EQ(CountOccurrences(steps, "class=\"mark repeat ps\""), 3);
  EXPECT_EQ(CountOccurrences(steps, "class=\"mark step-spread ring\""), 1);
  EXPECT_THAT(steps, HasSubstr("over repeats)"));
  const std::string phases = PhaseChart(job, "phases");
  EXPECT_EQ(CountOccurrences(phases, "class=\"mark spread ring\""), 1);
  EXPECT_THAT(phases, HasSubstr("ring: mean step over 3 repeats 200 ms\u2013230 ms"));
  const std::string accuracy = AccuracyOverTimeChart(job, "accuracy");
  EXPECT_THAT(accuracy, HasSubstr("ring: time to 75% over 3 repeats 12.0 s\u201313.5 s"));
  const std::string html = RenderHtmlReport({{job}});
  EXPECT_THAT(html, HasSubstr("bootstrap over 3 repeats per mode"));
  // One run: no repeat points, but still the spread of its steps.
  const std::string once = StepTimeChart(testing::FashionMnistJob(), "once");
  EXPECT_EQ(CountOccurrences(once, "mark repeat"), 0);
  EXPECT_EQ(CountOccurrences(once, "class=\"mark step-spread ring\""), 1);
  EXPECT_THAT(once, HasSubstr("over steps)"));
}

}  // namespace
}  // namespace ringside::cli
