// The scaling sweep's arithmetic (efficiency, the model, its calibration), its flag parsing,
// and what the JSON and the HTML report make of it. Pure: hand-built points.
#include "cli/scaling_sweep.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/report/report_charts.h"
#include "cli/report/report_html.h"
#include "gtest/gtest.h"
#include "tests/cli/html_probe.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using nlohmann::json;

ScalingPoint Measured(int workers, int shards, double samples_per_second, double compute,
                      double sync, double update) {
  ScalingPoint p;
  p.workers = workers;
  p.ps_shards = shards;
  p.completed = true;
  p.samples_per_second = samples_per_second;
  p.phases = {compute, sync, update};
  p.step_p50 = p.step_mean = compute + sync + update;
  return p;
}

// A ring sweep over N = 1, 2, 4, 8 of the sample's 784,1024,1024,10 job.
JobComparison RingSweep() {
  JobComparison job = testing::SyntheticJob();
  job.ring.scaling = {
      Measured(1, 2, 400, 0.150, 0, 0.010), Measured(2, 2, 500, 0.080, 0.040, 0.010),
      Measured(4, 2, 600, 0.080, 0.060, 0.010), Measured(8, 2, 500, 0.070, 0.050, 0.010)};
  FillScalingModel(job.ring, job.config, 0);
  return job;
}

TEST(ScalingSweepTest, EfficiencyIsOneAtTheBaselineAndSamplesPerWorkerAfter) {
  const JobComparison job = RingSweep();
  const std::vector<ScalingPoint>& points = job.ring.scaling;
  EXPECT_EQ(job.ring.scaling_baseline_workers, 1);
  EXPECT_DOUBLE_EQ(points[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(points[1].efficiency, 500.0 / (2 * 400));
  EXPECT_DOUBLE_EQ(points[3].efficiency, 500.0 / (8 * 400));
}

TEST(ScalingSweepTest, WithoutOneTheSmallestCountIsTheBaseline) {
  JobComparison job = testing::SyntheticJob();
  job.ring.scaling = {Measured(2, 2, 500, 0.08, 0.04, 0.01), Measured(4, 2, 800, 0.04, 0.05, 0.01)};
  FillScalingModel(job.ring, job.config, 0);
  EXPECT_EQ(job.ring.scaling_baseline_workers, 2);
  EXPECT_DOUBLE_EQ(job.ring.scaling[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(job.ring.scaling[1].efficiency, 800.0 / (2 * 500));
  const std::vector<std::string> lines = ScalingExplanation(job.ring, 2);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("1 was not swept"), std::string::npos) << lines[0];
}

TEST(ScalingSweepTest, TheModelScalesComputeAsOneOverNAndCalibratesTheSyncOnce) {
  const JobComparison job = RingSweep();
  // N = 1 has no ring traffic: calibrated at N = 2, bytes ÷ sync time.
  EXPECT_EQ(job.ring.model_calibrated_at, 2);
  const double bytes_at_2 = 2.0 * 1 / 2 * 1863690 * 4;  // 2(N-1)/N·K·4
  EXPECT_NEAR(job.ring.model_bytes_per_second, bytes_at_2 / 0.040, 1e-6 * bytes_at_2 / 0.040);
  const ScalingPoint& at8 = job.ring.scaling[3];
  EXPECT_DOUBLE_EQ(at8.model.compute, 0.150 / 8);
  EXPECT_DOUBLE_EQ(at8.model.update, 0.010);
  // 2(N-1)/N grows from 1 at N = 2 to 1.75 at N = 8 (chunk sizes make it inexact).
  EXPECT_NEAR(at8.model.sync, 0.040 * 1.75, 0.040 * 1.75 * 1e-5);
  EXPECT_DOUBLE_EQ(at8.model_step_seconds, at8.model.compute + at8.model.sync + at8.model.update);
  // A link rate, where one is known, replaces the calibration.
  JobComparison lab = RingSweep();
  FillScalingModel(lab.ring, lab.config, 12.5e6);
  EXPECT_EQ(lab.ring.model_calibrated_at, 0);
  EXPECT_NEAR(lab.ring.scaling[1].model.sync, bytes_at_2 / 12.5e6, 1e-9);
}

TEST(ScalingSweepTest, ExplainsWhereComputeStopsShrinking) {
  const JobComparison job = RingSweep();
  const std::vector<std::string> lines = ScalingExplanation(job.ring, 2);
  ASSERT_EQ(lines.size(), 3u);
  // N = 4 and 8 are off the model, each named with its ratio; N = 1 and 2 are not.
  EXPECT_NE(lines[1].find("more than 25% off the model at 2 of 4 sizes"), std::string::npos)
      << lines[1];
  for (int i : {2, 3}) {
    const ScalingPoint& p = job.ring.scaling[i];
    EXPECT_NE(lines[1].find(absl::StrFormat("N = %d (%.2f\u00d7)", p.workers,
                                            p.step_mean / p.model_step_seconds)),
              std::string::npos)
        << lines[1];
  }
  EXPECT_EQ(lines[1].find("N = 2 ("), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("part first at N = 4"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("share 2 cores"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("CPU contention"), std::string::npos) << lines[2];
}

// A ps sweep at S = 1 and 2: S = 1 follows the model, S = 2 is 4-8x off it. The text covers
// every row of the table, so it names the S = 2 sizes with the ratio of their two columns and
// never says the step is within 25% everywhere.
TEST(ScalingSweepTest, TheTextSaysWhatEveryShardCountsRowsSay) {
  JobComparison job = testing::SyntheticJob();
  job.ps.scaling = {Measured(1, 1, 300, 0.15, 0.02, 0.01), Measured(2, 1, 500, 0.075, 0.04, 0.01),
                    Measured(1, 2, 100, 0.15, 0.50, 0.01), Measured(2, 2, 70, 0.075, 0.80, 0.01)};
  FillScalingModel(job.ps, job.config, 0);
  std::ostringstream table;
  PrintScalingTable(job, table);
  const std::string text = table.str();
  EXPECT_EQ(text.find("within 25%"), std::string::npos) << text;
  EXPECT_NE(text.find("more than 25% off the model at 2 of 4 sizes"), std::string::npos) << text;
  for (const ScalingPoint& p : job.ps.scaling) {
    const double ratio = p.step_mean / p.model_step_seconds;
    const std::string named =
        absl::StrFormat("N = %d, S = %d (%.2f\u00d7)", p.workers, p.ps_shards, ratio);
    if (p.ps_shards == 2) {
      EXPECT_GT(ratio, 3.5) << named;
      EXPECT_NE(text.find(named), std::string::npos) << named << "\n" << text;
    } else {
      EXPECT_NEAR(ratio, 1, 0.25) << named;
      EXPECT_EQ(text.find(named), std::string::npos) << named << "\n" << text;
    }
  }
  // Only S = 1: within 25% everywhere, and the furthest size named.
  job.ps.scaling.resize(2);
  const std::vector<std::string> lines = ScalingExplanation(job.ps, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("within 25% of the model at every size (furthest: 1.00\u00d7"),
            std::string::npos)
      << lines[1];
}

TEST(ScalingSweepTest, PsShardCountsHaveBaselinesOfTheirOwn) {
  JobComparison job = testing::SyntheticJob();
  job.ps.scaling = {Measured(1, 1, 300, 0.15, 0.02, 0.01), Measured(2, 1, 400, 0.08, 0.06, 0.01),
                    Measured(1, 2, 320, 0.15, 0.02, 0.01), Measured(2, 2, 480, 0.08, 0.04, 0.01)};
  FillScalingModel(job.ps, job.config, 0);
  EXPECT_DOUBLE_EQ(job.ps.scaling[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(job.ps.scaling[2].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(job.ps.scaling[3].efficiency, 480.0 / (2 * 320));
  // A ps worker sends K even alone: calibrated at N = 1 (busiest node: the worker, K·4 bytes).
  EXPECT_EQ(job.ps.model_calibrated_at, 1);
}

TEST(ScalingSweepTest, AFailedSizeHasNoEfficiencyAndIsNotTheBaseline) {
  JobComparison job = testing::SyntheticJob();
  ScalingPoint failed;
  failed.workers = 1;
  failed.ps_shards = 2;
  job.ring.scaling = {failed, Measured(2, 2, 500, 0.08, 0.04, 0.01)};
  FillScalingModel(job.ring, job.config, 0);
  EXPECT_EQ(job.ring.scaling_baseline_workers, 2);
  EXPECT_EQ(job.ring.scaling[0].efficiency, 0);
}

// A 16-bit wire's sampled gradient error gets a column of its own, one figure per N (how it
// grows with N is the point of the sweep); a float32 sweep's table has no such column.
TEST(ScalingSweepTest, TheTableShowsEachSizesGradientErrorOnlyForA16BitWire) {
  JobComparison job = RingSweep();
  std::ostringstream fp32;
  PrintScalingTable(job, fp32);
  EXPECT_EQ(fp32.str().find("gradient error"), std::string::npos) << fp32.str();

  job.ring.scaling[1].wire_relative_error = 2.44e-4;
  job.ring.scaling[3].wire_relative_error = 4.29e-4;
  std::ostringstream fp16;
  PrintScalingTable(job, fp16);
  const std::string table = fp16.str();
  EXPECT_NE(table.find("gradient error"), std::string::npos) << table;
  EXPECT_NE(table.find("2.44e-04"), std::string::npos) << table;
  EXPECT_NE(table.find("4.29e-04"), std::string::npos) << table;
  // The sizes without a sample say so, in the same column.
  const size_t header = table.find("gradient error");
  const size_t row_n1 = table.find("\n  ring  1 ");
  ASSERT_NE(row_n1, std::string::npos) << table;
  const size_t header_start = table.rfind('\n', header) + 1;
  const size_t row_end = table.find('\n', row_n1 + 1);
  EXPECT_EQ(table.substr(row_n1 + 1 + (header - header_start), 1), "-") << table;
  EXPECT_EQ(row_end, row_n1 + 1 + (header - header_start) + 1) << table;
}

TEST(ScalingSweepTest, ParsesCountLists) {
  EXPECT_EQ(ParseCountList("--workers", "4", 1024).value(), std::vector<int>{4});
  EXPECT_EQ(ParseCountList("--workers", "8,1,2,4", 1024).value(), (std::vector<int>{1, 2, 4, 8}));
  for (const char* bad : {"", "0", "1,,2", "a", "2,2", "-1", "1.5", "2000"}) {
    absl::StatusOr<std::vector<int>> parsed = ParseCountList("--workers", bad, 1024);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--workers"), std::string::npos);
  }
}

TEST(ScalingSweepTest, JsonHasOneScalingRecordPerSizeOnlyWhenSwept) {
  CompareReport report;
  report.jobs.push_back(RingSweep());
  const json doc = CompareJson(report);
  const json& scaling = doc["modes"]["ring"]["scaling"];
  ASSERT_EQ(scaling.size(), 4u);
  for (size_t i = 0; i < scaling.size(); ++i) {
    EXPECT_EQ(scaling[i]["workers"], report.jobs[0].ring.scaling[i].workers);
    EXPECT_TRUE(scaling[i]["samples_per_second"].is_number());
    EXPECT_TRUE(scaling[i]["efficiency"].is_number());
    EXPECT_TRUE(scaling[i]["model"]["step_seconds"].is_number());
  }
  EXPECT_EQ(scaling[0]["efficiency"], 1.0);
  EXPECT_EQ(doc["modes"]["ring"]["scaling_baseline_workers"], 1);
  // No sweep, no scaling: the JSON of a single size keeps its shape.
  EXPECT_FALSE(doc["modes"]["ps"].contains("scaling"));
  EXPECT_FALSE(CompareJson(testing::SampleReport())["modes"]["ring"].contains("scaling"));
}

TEST(ScalingSweepTest, TheReportDrawsOneChartPerModeWithTheModel) {
  CompareReport report;
  report.jobs.push_back(RingSweep());
  const std::string html = RenderHtmlReport(report);
  EXPECT_NE(html.find("id=\"scaling-ring-job0\""), std::string::npos);
  const std::string chart = ScalingChart(report.jobs[0].ring, 2, "c");
  // Four sizes: a step, compute, sync and model mark at each, and their lines.
  EXPECT_EQ(testing::CountOccurrences(chart, "class=\"mark step\""), 4 + 1);
  EXPECT_EQ(testing::CountOccurrences(chart, "class=\"mark model\""), 4 + 1);
  EXPECT_NE(html.find("CPU contention"), std::string::npos);
  // No ps sweep was given: its chart says so instead of drawing nothing silently.
  EXPECT_NE(ScalingChart(report.jobs[0].ps, 2, "p").find("no data"), std::string::npos);
}

TEST(ScalingSweepTest, TheLossChartDrawsBothModes) {
  JobComparison job = testing::SyntheticJob();
  job.ring.loss_over_time = {{1.0, 0, 2.3}, {2.0, 1, 1.5}, {3.0, 2, 0.9}};
  job.ps.loss_over_time = {{1.5, 0, 2.3}, {3.5, 1, 1.5}};
  const std::string chart = LossOverTimeChart(job, "loss");
  EXPECT_EQ(testing::CountOccurrences(chart, "class=\"mark loss ring\""), 1);
  EXPECT_EQ(testing::CountOccurrences(chart, "class=\"mark loss ps\""), 1);
  CompareReport report;
  report.jobs.push_back(job);
  const json doc = CompareJson(report);
  ASSERT_EQ(doc["modes"]["ring"]["loss_over_time"].size(), 3u);
  EXPECT_EQ(doc["modes"]["ring"]["loss_over_time"][2]["seconds"], 3.0);
  EXPECT_EQ(doc["modes"]["ps"]["loss_over_time"][1]["loss"], 1.5);
}

// Start-up (4 s to the ring's first step, 5 s to the PS's) is not drawn: each run's time is
// counted from its own first step's start, so both curves begin at the plot's left edge.
TEST(ScalingSweepTest, TheLossChartStartsAtEachRunsFirstStep) {
  JobComparison job = testing::SyntheticJob();
  job.ring.first_step_start_seconds = 4.0;
  job.ring.loss_over_time = {{4.2, 0, 2.3}, {7.0, 10, 1.5}, {10.0, 20, 0.9}};
  job.ps.first_step_start_seconds = 5.0;
  job.ps.loss_over_time = {{5.3, 0, 2.3}, {8.0, 10, 1.5}, {9.5, 20, 0.9}};
  const std::string chart = LossOverTimeChart(job, "loss");
  // 6 s of training at most: the axis ends at 6 s, not at the cluster clock's 10 s.
  EXPECT_NE(chart.find(">6 s</text>"), std::string::npos) << chart;
  EXPECT_EQ(chart.find(">10 s</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find("from each run"), std::string::npos);
  const auto ring = testing::CurvePoints(chart, "loss ring");
  const auto ps = testing::CurvePoints(chart, "loss ps");
  ASSERT_EQ(ring.size(), 3u);
  ASSERT_EQ(ps.size(), 3u);
  // The plot spans x = 76..556 for 0..6 s: step 0 ended 0.2 s (ring) and 0.3 s (ps) in.
  EXPECT_NEAR(ring[0].first, 76 + 0.2 / 6 * 480, 0.1);
  EXPECT_NEAR(ps[0].first, 76 + 0.3 / 6 * 480, 0.1);
  EXPECT_NEAR(ring[2].first, 556, 0.1);
  // An untimed first step (0): the first point is the origin.
  job.ring.first_step_start_seconds = 0;
  EXPECT_NEAR(testing::CurvePoints(LossOverTimeChart(job, "l"), "loss ring")[0].first, 76, 0.1);
  // The JSON keeps the cluster's clock and says where the first step began.
  CompareReport report;
  report.jobs.push_back(job);
  const json doc = CompareJson(report);
  EXPECT_EQ(doc["modes"]["ps"]["loss_over_time"][0]["seconds"], 5.3);
  EXPECT_EQ(doc["modes"]["ps"]["first_step_start_seconds"], 5.0);
}

}  // namespace
}  // namespace ringside::cli
