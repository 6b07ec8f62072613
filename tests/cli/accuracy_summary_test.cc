// Test accuracy over time and time to target: the evaluations file format, merging every
// worker's file, the summary (final, mean of the last few, first at or above the target), and
// how the table, the winner line, the JSON and the report show them.
#include "cli/report/accuracy_summary.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/report/comparison_summary.h"
#include "cli/report/explanations.h"
#include "cli/report/report_charts.h"
#include "cli/report/report_html.h"
#include "cli/report/verdict.h"
#include "common/cluster_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "tests/cli/html_probe.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EvaluationLineTest, RoundTripsAndRefusesBadLines) {
  const EvaluationLine line{150, 12.5, 0.8125, 0.53, 0.41, 1.25};
  absl::StatusOr<EvaluationLine> back = ParseEvaluationLine(EvaluationLineText(line));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step, 150);
  EXPECT_EQ(back->seconds, 12.5);
  EXPECT_EQ(back->test_accuracy, 0.8125);
  EXPECT_EQ(back->test_loss, 0.53);
  EXPECT_EQ(back->loss, 0.41);
  EXPECT_EQ(back->eval_seconds, 1.25);
  EXPECT_FALSE(ParseEvaluationLine(R"({"step":1,"seconds":1})").ok()) << "fields missing";
  EXPECT_FALSE(ParseEvaluationLine(EvaluationLineText({1, 1, 1.5, 0, 0, 0})).ok())
      << "an accuracy above 1";
  EXPECT_FALSE(ParseEvaluationLine(EvaluationLineText({-1, 1, 0.5, 0, 0, 0})).ok());
  EXPECT_FALSE(ParseEvaluationLine(EvaluationLineText(line).substr(0, 20)).ok()) << "cut short";
}

TEST(MergeEvaluationsTest, OnePointPerStepInStepOrderTheFirstFileWinning) {
  Evaluations first, second;
  first.lines = {{0, 0, 0.1, 0, 0, 1}, {50, 5, 0.6, 0, 0.9, 1}};
  second.lines = {{100, 10, 0.7, 0, 0.7, 3}, {50, 5.5, 0.2, 0, 0.5, 3}};
  const std::vector<AccuracyPoint> points = MergeEvaluations({first, second});
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].step, 0);
  EXPECT_EQ(points[1].step, 50);
  EXPECT_EQ(points[1].test_accuracy, 0.6) << "the first file's point of step 50";
  EXPECT_EQ(points[1].loss, 0.9);
  EXPECT_EQ(points[2].step, 100);
  EXPECT_EQ(points[2].seconds, 10);
  EXPECT_DOUBLE_EQ(MeanEvaluationSeconds({first, second}), 2.0);
  EXPECT_EQ(MeanEvaluationSeconds({}), 0);
}

ModeReport WithAccuracies(const std::vector<double>& accuracies) {
  ModeReport mode;
  for (size_t i = 0; i < accuracies.size(); ++i) {
    mode.accuracy_over_time.push_back({static_cast<int64_t>(25 * i), 2.0 * i, accuracies[i], 1});
  }
  return mode;
}

TEST(SummariseAccuracyTest, FinalRecentMeanAndTheFirstEvaluationAtTheTarget) {
  ModeReport mode = WithAccuracies({0.1, 0.6, 0.78, 0.74, 0.8, 0.82, 0.81});
  SummariseAccuracy(0.75, mode);
  ASSERT_TRUE(mode.test_accuracy.has_value());
  EXPECT_EQ(*mode.test_accuracy, 0.81);
  EXPECT_EQ(mode.recent_evaluations, 5);
  EXPECT_DOUBLE_EQ(*mode.test_accuracy_recent, (0.78 + 0.74 + 0.8 + 0.82 + 0.81) / 5);
  EXPECT_EQ(*mode.seconds_to_target, 4.0) << "step 50, though step 75 fell back below";
  EXPECT_EQ(*mode.steps_to_target, 50);

  SummariseAccuracy(0.78, mode);
  EXPECT_EQ(*mode.steps_to_target, 50) << "at or above";
  SummariseAccuracy(0.9, mode);
  EXPECT_FALSE(mode.seconds_to_target.has_value());
  EXPECT_FALSE(mode.steps_to_target.has_value());
  EXPECT_TRUE(mode.test_accuracy.has_value());

  ModeReport few = WithAccuracies({0.2, 0.4});
  SummariseAccuracy(0.75, few);
  EXPECT_EQ(few.recent_evaluations, 2);
  EXPECT_DOUBLE_EQ(*few.test_accuracy_recent, 0.3);

  ModeReport none;
  SummariseAccuracy(0.75, none);
  EXPECT_FALSE(none.test_accuracy.has_value());
  EXPECT_FALSE(none.test_accuracy_recent.has_value());
}

TEST(ReadAccuracyOverTimeTest, ReadsEveryWorkersFileAndReportsCutLines) {
  auto dir = launch::TempDir::Create("ringside-accuracy-test-");
  ASSERT_TRUE(dir.ok());
  {
    std::ofstream out(dir->File("worker-0.eval.jsonl"));
    out << EvaluationLineText({0, 0, 0.1, 2.3, 0, 1}) << "\n"
        << EvaluationLineText({25, 3, 0.8, 0.5, 0.6, 1}) << "\n"
        << EvaluationLineText({50, 6, 0.85, 0.4, 0.5, 1}).substr(0, 17);  // killed mid-line
  }
  ModeReport mode;
  ReadAccuracyOverTime({dir->File("worker-0.eval.jsonl"), dir->File("worker-1.eval.jsonl")}, 0.75,
                       mode);
  ASSERT_EQ(mode.accuracy_over_time.size(), 2u);
  EXPECT_EQ(*mode.steps_to_target, 25);
  EXPECT_EQ(*mode.seconds_to_target, 3);
  EXPECT_EQ(mode.eval_seconds_mean, 1);
  ASSERT_EQ(mode.events.size(), 1u);
  EXPECT_THAT(mode.events[0], HasSubstr("1 unreadable evaluation lines"));
}

std::string Table(const JobComparison& job) {
  std::ostringstream out;
  PrintComparisonTable(job, out);
  return out.str();
}

TEST(TimeToTargetTest, TheWinnerReachedTheTargetSoonerWhenBothDid) {
  const JobComparison job = testing::FashionMnistJob();
  const Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.outcome, Outcome::kWinner);
  EXPECT_EQ(verdict.winner, SyncMode::kRing);
  // Both synchronous and both at step 150: steps × the step time decides.
  EXPECT_EQ(verdict.basis, "step_seconds");
  EXPECT_DOUBLE_EQ(verdict.ratio, 0.350 / 0.210);
  EXPECT_THAT(verdict.line, HasSubstr("reaching 75% test accuracy 1.67\u00d7 as soon as ps"));
  EXPECT_THAT(verdict.line, HasSubstr("both took 150 steps to it"));
  EXPECT_THAT(verdict.line, HasSubstr("ring \u2248 31.5 s, ps \u2248 52.5 s"));

  const std::string table = Table(job);
  EXPECT_THAT(table, HasSubstr("test accuracy, final"));
  EXPECT_THAT(table, HasSubstr("81.0%"));
  EXPECT_THAT(table, HasSubstr("79.0% (last 5)"));
  EXPECT_THAT(table, HasSubstr("time to 75% test accuracy"));
  EXPECT_THAT(table, HasSubstr("12.0 s, step 150"));
  EXPECT_THAT(table, HasSubstr("13 \u00d7 1.25 s"));
  EXPECT_THAT(table, HasSubstr("defined on what was measured"));
  EXPECT_THAT(table, Not(HasSubstr("\u2502 accuracy ")));
}

TEST(TimeToTargetTest, WhenOnlyOneOrNeitherReachedItThroughputDecidesAndTheLineSaysSo) {
  JobComparison job = testing::FashionMnistJob();
  job.ps.seconds_to_target.reset();
  job.ps.steps_to_target.reset();
  Verdict verdict = DecideWinner(job);
  EXPECT_EQ(verdict.basis, "step_seconds");
  EXPECT_THAT(verdict.line, HasSubstr("Only ring reached 75% test accuracy (12.0 s, step 150)."));
  EXPECT_THAT(Table(job), HasSubstr("not reached in 300 steps"));
  job.ring.seconds_to_target.reset();
  job.ring.steps_to_target.reset();
  verdict = DecideWinner(job);
  EXPECT_THAT(verdict.line, HasSubstr("Neither mode reached 75% test accuracy within 300 steps."));
}

TEST(TimeToTargetTest, DataWithoutATestSetKeepsTheAccuracyRowAndSaysNothingOfTargets) {
  const JobComparison iris = testing::IrisJobWithLostWorker();
  const std::string table = Table(iris);
  EXPECT_THAT(table, HasSubstr("\u2502 accuracy "));
  EXPECT_THAT(table, Not(HasSubstr("time to")));
  EXPECT_THAT(DecideWinner(iris).line, Not(HasSubstr("test accuracy")));
  EXPECT_TRUE(AccuracyExplanation(iris).empty());
}

TEST(TimeToTargetTest, TheJsonCarriesTheFiguresAndNullsForWhatWasNotMeasured) {
  JobComparison job = testing::FashionMnistJob();
  job.ps.seconds_to_target.reset();
  job.ps.steps_to_target.reset();
  const nlohmann::json doc = JobJson(job);
  EXPECT_EQ(doc["config"]["target_accuracy"], 0.75);
  EXPECT_EQ(doc["config"]["eval_every"], 25);
  EXPECT_EQ(doc["config"]["test_set"], true);
  const nlohmann::json& ring = doc["modes"]["ring"];
  EXPECT_EQ(ring["test_accuracy"], 0.81);
  EXPECT_EQ(ring["test_accuracy_recent_mean"], 0.79);
  EXPECT_EQ(ring["recent_evaluations"], 5);
  EXPECT_EQ(ring["seconds_to_target"], 12.0);
  EXPECT_EQ(ring["steps_to_target"], 150);
  EXPECT_EQ(ring["eval_seconds_mean"], 1.25);
  ASSERT_EQ(ring["accuracy_over_time"].size(), 13u);
  const nlohmann::json& point = ring["accuracy_over_time"][6];
  EXPECT_EQ(point["step"], 150);
  EXPECT_EQ(point["seconds"], 12.0);
  EXPECT_EQ(point["test_accuracy"], 0.76);
  EXPECT_TRUE(point["loss"].is_number());
  EXPECT_TRUE(doc["modes"]["ps"]["seconds_to_target"].is_null());
  EXPECT_TRUE(doc["modes"]["ps"]["steps_to_target"].is_null());
  EXPECT_EQ(doc["winner"]["basis"], "step_seconds");

  const nlohmann::json iris = JobJson(testing::IrisJobWithLostWorker());
  EXPECT_TRUE(iris["modes"]["ring"]["test_accuracy"].is_null());
  EXPECT_TRUE(iris["modes"]["ring"]["accuracy_over_time"].empty());
  EXPECT_EQ(iris["config"]["test_set"], false);
}

TEST(TimeToTargetTest, TheReportChartsAccuracyOverTimeWithTheTarget) {
  CompareReport report;
  report.jobs = {testing::FashionMnistJob(), testing::IrisJobWithLostWorker()};
  const std::string html = RenderHtmlReport(report);
  const std::string svg = testing::SvgById(html, "accuracy-time-job0");
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(testing::CountMarks(svg, "circle", "evaluation ring"), 13);
  EXPECT_EQ(testing::CountMarks(svg, "circle", "evaluation ps"), 13);
  EXPECT_EQ(testing::CountMarks(svg, "polyline", "accuracy ring"), 1);
  EXPECT_THAT(svg, HasSubstr("target 75%"));
  EXPECT_THAT(svg, HasSubstr("ring 75% at 12.0 s"));
  EXPECT_THAT(html, HasSubstr("Test accuracy and time to target"));
  EXPECT_TRUE(testing::SvgById(html, "accuracy-time-job1").empty()) << "Iris has no test set";

  JobComparison empty = testing::FashionMnistJob();
  empty.ring.accuracy_over_time.clear();
  empty.ps.accuracy_over_time.clear();
  const std::string none = AccuracyOverTimeChart(empty, "none");
  EXPECT_THAT(none, HasSubstr("no data"));
  EXPECT_EQ(testing::CountMarks(none, "circle"), 0);
}

}  // namespace
}  // namespace ringside::cli
