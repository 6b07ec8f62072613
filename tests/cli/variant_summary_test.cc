// --ps_variants in the report: the table of every run, the first variant to the target and by
// how much, the JSON's fields, the HTML table and one accuracy curve per run.
#include "cli/report/variant_summary.h"

#include "absl/strings/match.h"
#include "cli/report/job_runs.h"
#include "cli/report/report_charts.h"
#include "cli/report/report_html.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/html_probe.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModeReport Variant(const JobComparison& job, const std::string& name,
                   std::optional<double> seconds_to_target) {
  ModeReport run = job.ps;
  run.variant = name;
  run.seconds_to_target = seconds_to_target;
  if (!seconds_to_target.has_value()) run.steps_to_target.reset();
  return run;
}

// The ring at 12 s (FashionMnistJob), the synchronous PS at 30 s, staleness 2 at 24 s, one
// backup worker never at the target, async at 8 s.
JobComparison StragglerJob() {
  JobComparison job = testing::FashionMnistJob();
  job.ps_variants = {Variant(job, "sync", 30.0), Variant(job, "staleness=2", 24.0),
                     Variant(job, "backup_workers=1", std::nullopt), Variant(job, "async", 8.0)};
  job.ps = job.ps_variants.front();
  return job;
}

TEST(VariantSummaryTest, NamesEveryRunRingFirst) {
  const JobComparison job = StragglerJob();
  std::vector<std::string> names;
  for (const ModeReport* run : JobRuns(job)) names.push_back(RunName(*run));
  EXPECT_THAT(names,
              ElementsAre("ring", "ps sync", "ps staleness=2", "ps backup_workers=1", "ps async"));
  const JobComparison plain = testing::FashionMnistJob();
  names.clear();
  for (const ModeReport* run : JobRuns(plain)) names.push_back(RunName(*run));
  EXPECT_THAT(names, ElementsAre("ring", "ps"));
}

TEST(VariantSummaryTest, TableHasARowPerRunWithItsTimeToTarget) {
  const std::vector<std::vector<std::string>> table = VariantTable(StragglerJob());
  ASSERT_EQ(table.size(), 6u);
  EXPECT_EQ(table[0][1], "time to 75%");
  EXPECT_EQ(table[1][0], "ring");
  EXPECT_THAT(table[1][1], HasSubstr("12"));
  EXPECT_THAT(table[2][1], HasSubstr("30"));
  EXPECT_EQ(table[4][1], "not reached");
  EXPECT_THAT(table[5][1], HasSubstr("8"));
}

TEST(VariantSummaryTest, TheFirstVariantAtTheTargetAndItsLeads) {
  const VariantVerdict verdict = DecideBestVariant(StragglerJob());
  EXPECT_EQ(verdict.best, "ps async");
  ASSERT_TRUE(verdict.over_ring.has_value());
  EXPECT_DOUBLE_EQ(*verdict.over_ring, 12.0 / 8.0);
  ASSERT_TRUE(verdict.over_sync.has_value());
  EXPECT_DOUBLE_EQ(*verdict.over_sync, 30.0 / 8.0);
  EXPECT_THAT(verdict.line, HasSubstr("ps async"));
  EXPECT_THAT(verdict.line, HasSubstr("1.50\u00d7 sooner than the ring"));
  EXPECT_THAT(verdict.line, HasSubstr("3.75\u00d7 sooner than the synchronous PS"));
}

TEST(VariantSummaryTest, SaysSoWhenNoVariantOrTheRingDidNotReachIt) {
  JobComparison job = StragglerJob();
  job.ring.seconds_to_target.reset();
  VariantVerdict verdict = DecideBestVariant(job);
  EXPECT_FALSE(verdict.over_ring.has_value());
  EXPECT_THAT(verdict.line, HasSubstr("the ring did not reach it"));
  for (ModeReport& run : job.ps_variants) run.seconds_to_target.reset();
  verdict = DecideBestVariant(job);
  EXPECT_TRUE(verdict.best.empty());
  EXPECT_EQ(verdict.line, "No PS variant reached 75% test accuracy.");
}

TEST(VariantSummaryTest, ARunWithoutTheStragglerIsTheReferenceNeverTheBest) {
  JobComparison job = StragglerJob();
  // Sooner than every other, and still not the best: its name says it ran without the straggler.
  job.ps_variants.push_back(Variant(job, "sync/no_straggler", 6.0));
  const VariantVerdict verdict = DecideBestVariant(job);
  EXPECT_EQ(verdict.best, "ps async");
  ASSERT_TRUE(verdict.best_over_sync_without_straggler.has_value());
  EXPECT_DOUBLE_EQ(*verdict.best_over_sync_without_straggler, 8.0 / 6.0);
  EXPECT_THAT(verdict.line,
              HasSubstr("1.33\u00d7 the synchronous PS's time without the straggler"));
  CompareReport report;
  report.jobs.push_back(job);
  EXPECT_DOUBLE_EQ(
      CompareJson(report)["best_ps_variant"]["best_over_sync_without_straggler"].get<double>(),
      8.0 / 6.0);
  EXPECT_FALSE(DecideBestVariant(StragglerJob()).best_over_sync_without_straggler.has_value());
}

TEST(VariantSummaryTest, AVariantBehindTheRingSaysHowMuchLater) {
  JobComparison job = StragglerJob();
  job.ps_variants = {Variant(job, "sync", 18.0), Variant(job, "async", 24.0)};
  const VariantVerdict verdict = DecideBestVariant(job);
  EXPECT_EQ(verdict.best, "ps sync");
  EXPECT_DOUBLE_EQ(*verdict.over_ring, 12.0 / 18.0);
  EXPECT_THAT(verdict.line, HasSubstr("1.50\u00d7 later than the ring"));
}

TEST(VariantSummaryTest, TheSyncVariantFirstHasNoLeadOverItself) {
  JobComparison job = StragglerJob();
  job.ps_variants = {Variant(job, "sync", 5.0), Variant(job, "async", 8.0)};
  const VariantVerdict verdict = DecideBestVariant(job);
  EXPECT_EQ(verdict.best, "ps sync");
  EXPECT_FALSE(verdict.over_sync.has_value());
  EXPECT_THAT(verdict.line, ::testing::Not(HasSubstr("synchronous PS")));
}

TEST(VariantSummaryTest, JsonListsEveryVariantAndTheFirstAtTheTarget) {
  CompareReport report;
  report.jobs.push_back(StragglerJob());
  const nlohmann::json doc = CompareJson(report);
  const nlohmann::json& variants = doc["modes"]["ps_variants"];
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[1]["variant"], "staleness=2");
  EXPECT_EQ(variants[1]["mode"], "ps");
  EXPECT_DOUBLE_EQ(variants[1]["seconds_to_target"].get<double>(), 24.0);
  EXPECT_TRUE(variants[2]["seconds_to_target"].is_null());
  EXPECT_EQ(doc["best_ps_variant"]["variant"], "ps async");
  EXPECT_DOUBLE_EQ(doc["best_ps_variant"]["ring_over_best"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(doc["best_ps_variant"]["sync_over_best"].get<double>(), 3.75);
  // Without variants neither field appears: the contract's document is unchanged.
  report.jobs = {testing::FashionMnistJob()};
  const nlohmann::json plain = CompareJson(report);
  EXPECT_FALSE(plain["modes"].contains("ps_variants"));
  EXPECT_FALSE(plain.contains("best_ps_variant"));
}

TEST(VariantSummaryTest, ReportHasTheTableAndACurvePerRun) {
  CompareReport report;
  report.jobs.push_back(StragglerJob());
  const std::string html = RenderHtmlReport(report);
  EXPECT_THAT(html, HasSubstr("The ring and every PS variant"));
  EXPECT_THAT(html, HasSubstr("ps backup_workers=1"));
  EXPECT_THAT(html, HasSubstr("First PS variant to 75%: ps async"));
  const std::string chart = AccuracyOverTimeChart(report.jobs[0], "acc");
  for (const char* run : {"ring", "ps sync", "ps staleness=2", "ps backup_workers=1", "ps async"}) {
    EXPECT_THAT(chart, HasSubstr(std::string("accuracy ") + run)) << run;
  }
}

// Every run gets a bar in the phase chart, and its labels (the run's name under the bar, the
// total above it) cannot overlap however long the names: their boxes are disjoint and on the
// canvas.
TEST(VariantSummaryTest, ThePhaseChartsLabelsOfManyLongNamesDoNotOverlap) {
  JobComparison job = StragglerJob();
  for (const char* name : {"backup_workers=1/no_straggler", "staleness=async/no_straggler",
                           "sync/no_straggler", "staleness=12"}) {
    job.ps_variants.push_back(Variant(job, name, 9.0));
  }
  job.ps_variants[2].completed = false;  // a failed run says so in its slot
  job.ps_colocated = job.ps;
  job.ps_colocated->colocated = true;
  job.ps_colocated->variant.clear();
  const std::string svg = PhaseChart(job, "phases");
  EXPECT_THAT(svg, HasSubstr("every run"));
  const size_t runs = JobRuns(job).size();
  EXPECT_EQ(testing::CountMarks(svg, "rect", "phase sync ps staleness=2"), 1);
  EXPECT_EQ(testing::CountMarks(svg, "rect", "phase sync ps colocated"), 1);
  EXPECT_EQ(testing::CountMarks(svg, "rect", "phase sync ps backup_workers=1"), 0);  // failed

  std::vector<testing::SvgText> labels = testing::TextsOfClass(svg, "run-label");
  std::string names;
  for (const testing::SvgText& label : labels) names += label.text + "|";
  EXPECT_THAT(names, HasSubstr("backup_workers=1|/no_straggler|")) << "wrapped before the '/'";
  const std::vector<testing::SvgText> values = testing::TextsOfClass(svg, "bar-value");
  EXPECT_EQ(values.size(), runs);
  labels.insert(labels.end(), values.begin(), values.end());
  const double width = std::stod(svg.substr(svg.find("width=\"") + 7));
  for (size_t i = 0; i < labels.size(); ++i) {
    const testing::Box a = testing::BoxOf(labels[i]);
    EXPECT_GE(a.left, 0) << labels[i].text;
    EXPECT_LE(a.right, width) << labels[i].text;
    for (size_t j = i + 1; j < labels.size(); ++j) {
      EXPECT_FALSE(testing::Intersect(a, testing::BoxOf(labels[j])))
          << labels[i].text << " meets " << labels[j].text;
    }
  }
}

}  // namespace
}  // namespace ringside::cli
