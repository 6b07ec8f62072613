// Accuracy per byte (issue 47 point 4): every evaluation's bytes sent, the bytes to the target
// and their spread over repeats, in the table, the JSON and the report; and
// --compression_variants, which adds a compressed run per codec and mode it fits. Recorded
// figures only: nothing here is timed.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/compression_variants.h"
#include "cli/report/accuracy_summary.h"
#include "cli/report/compare_report.h"
#include "cli/report/job_runs.h"
#include "cli/report/repeats.h"
#include "cli/report/report_charts.h"
#include "cli/report/report_html.h"
#include "cli/report/variant_summary.h"
#include "common/cluster_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every 25 steps as the sample job evaluates, `bytes_per_step` sent per step after `warmup`
// steps that sent `warmup_bytes_per_step` (an uncompressed warm-up).
void SetBytes(ModeReport& mode, int64_t bytes_per_step, int64_t warmup = 0,
              int64_t warmup_bytes_per_step = 0) {
  for (AccuracyPoint& p : mode.accuracy_over_time) {
    const int64_t before = std::min(p.step, warmup);
    p.sent_bytes = before * warmup_bytes_per_step + (p.step - before) * bytes_per_step;
  }
}

// The sample Fashion-MNIST job (ring and ps reach 75% at step 150) with bytes recorded, and a
// random-k ring run that reaches it at step 200 with a sixteenth of the ring's bytes per step.
JobComparison CompressedJob() {
  JobComparison job = testing::FashionMnistJob();
  SetBytes(job.ring, 6000);
  SetBytes(job.ps, 8000);
  ModeReport compressed = job.ring;
  compressed.variant = compressed.compression = "randomk:0.0625";
  compressed.accuracy_over_time.clear();
  const double accuracy[] = {0.09, 0.5, 0.6, 0.66, 0.7, 0.72, 0.73, 0.74, 0.76, 0.77};
  for (int i = 0; i < 10; ++i) {
    compressed.accuracy_over_time.push_back({25 * i, 1.5 * i, accuracy[i], 1});
  }
  SetBytes(compressed, 375, /*warmup=*/10, /*warmup_bytes_per_step=*/6000);
  for (ModeReport* mode : {&job.ring, &job.ps, &compressed}) SummariseAccuracy(0.75, *mode);
  job.compression_variants = {compressed};
  return job;
}

TEST(EvaluationLineBytesTest, SentBytesRoundTripAndAreOptionalInTheFile) {
  EvaluationLine line{150, 12.5, 0.8125, 0.53, 0.41, 1.25};
  line.sent_bytes = 123456789;
  const absl::StatusOr<EvaluationLine> back = ParseEvaluationLine(EvaluationLineText(line));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->sent_bytes, 123456789);
  line.sent_bytes = -1;  // not recorded: not written
  EXPECT_THAT(EvaluationLineText(line), ::testing::Not(HasSubstr("sent_bytes")));
  const absl::StatusOr<EvaluationLine> older = ParseEvaluationLine(
      R"({"step":1,"seconds":1,"test_accuracy":0.5,"test_loss":1,"loss":1,"eval_seconds":1})");
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->sent_bytes, -1);
  EXPECT_FALSE(
      ParseEvaluationLine(R"({"step":1,"seconds":1,"test_accuracy":0.5,"test_loss":1,"loss":1,)"
                          R"("eval_seconds":1,"sent_bytes":-7})")
          .ok());
  // Merged into the report's points: recorded where the line had it.
  Evaluations file;
  file.lines = {*older, *back};
  const std::vector<AccuracyPoint> points = MergeEvaluations({file});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_FALSE(points[0].sent_bytes.has_value());
  EXPECT_EQ(points[1].sent_bytes, 123456789);
}

TEST(BytesToTargetTest, IsTheBytesSentAtTheFirstEvaluationAtTheTarget) {
  const JobComparison job = CompressedJob();
  EXPECT_EQ(job.ring.steps_to_target, 150);
  EXPECT_EQ(job.ring.bytes_to_target, 150 * 6000);
  EXPECT_EQ(job.ps.bytes_to_target, 150 * 8000);
  const ModeReport& compressed = job.compression_variants.front();
  EXPECT_EQ(compressed.steps_to_target, 200);
  EXPECT_EQ(compressed.bytes_to_target, 10 * 6000 + 190 * 375) << "the warm-up's bytes count";
}

TEST(BytesToTargetTest, UnsetWhenNotReachedOrNotRecorded) {
  JobComparison job = testing::FashionMnistJob();  // no bytes recorded
  SummariseAccuracy(0.75, job.ring);
  EXPECT_TRUE(job.ring.seconds_to_target.has_value());
  EXPECT_FALSE(job.ring.bytes_to_target.has_value());
  SetBytes(job.ring, 100);
  SummariseAccuracy(0.99, job.ring);
  EXPECT_FALSE(job.ring.bytes_to_target.has_value()) << "never reached 99%";
}

TEST(BytesToTargetTest, RepeatsTakeTheMedianAndTheJsonKeepsTheSpread) {
  std::vector<ModeReport> runs;
  for (int64_t bytes : {7000, 5000, 6000}) {
    ModeReport run = testing::FashionMnistJob().ring;
    run.completed = true;
    SetBytes(run, bytes);
    SummariseAccuracy(0.75, run);
    runs.push_back(run);
  }
  const ModeReport summary = SummariseRepeats(runs);
  EXPECT_EQ(summary.bytes_to_target, 150 * 6000);
  JobComparison job = testing::FashionMnistJob();
  job.ring = summary;
  const nlohmann::json json = JobJson(job);
  const nlohmann::json& spread = json["modes"]["ring"]["spread"]["bytes_to_target"];
  EXPECT_EQ(spread["median"], 150 * 6000);
  EXPECT_EQ(spread["min"], 150 * 5000);
  EXPECT_EQ(spread["max"], 150 * 7000);
  EXPECT_EQ(spread["count"], 3);
  ASSERT_EQ(json["modes"]["ring"]["repeats"].size(), 3u);
  EXPECT_EQ(json["modes"]["ring"]["repeats"][1]["bytes_to_target"], 150 * 5000);

  // One run short of the target.
  for (AccuracyPoint& p : runs[1].accuracy_over_time) {
    p.test_accuracy = std::min(p.test_accuracy, 0.7);
  }
  SummariseAccuracy(0.75, runs[1]);
  EXPECT_FALSE(SummariseRepeats(runs).bytes_to_target.has_value())
      << "a median only where every run reached the target";
}

TEST(BytesToTargetTest, TheJsonCarriesAccuracyAgainstBytesAndEveryCompressedRun) {
  const nlohmann::json json = JobJson(CompressedJob());
  const nlohmann::json& ring = json["modes"]["ring"];
  EXPECT_EQ(ring["compression"], "none");
  EXPECT_EQ(ring["bytes_to_target"], 150 * 6000);
  ASSERT_EQ(ring["accuracy_over_time"].size(), 13u);
  EXPECT_EQ(ring["accuracy_over_time"][4]["sent_bytes"], 100 * 6000);
  EXPECT_TRUE(ring["accuracy_over_time"][4].contains("seconds")) << "beside accuracy vs time";
  const nlohmann::json& variants = json["modes"]["compression_variants"];
  ASSERT_EQ(variants.size(), 1u);
  EXPECT_EQ(variants[0]["mode"], "ring");
  EXPECT_EQ(variants[0]["compression"], "randomk:0.0625");
  EXPECT_FALSE(variants[0].contains("variant")) << "a ps variant's field";
  EXPECT_EQ(variants[0]["bytes_to_target"], 10 * 6000 + 190 * 375);
  EXPECT_TRUE(variants[0]["spread"].contains("bytes_to_target"));
  EXPECT_FALSE(JobJson(testing::FashionMnistJob())["modes"].contains("compression_variants"));
  EXPECT_EQ(JobJson(testing::FashionMnistJob())["modes"]["ring"]["bytes_to_target"], nullptr);
}

TEST(BytesToTargetTest, TheTableHasABytesToTargetColumnAndRow) {
  const JobComparison job = CompressedJob();
  std::vector<std::string> names;
  for (const ModeReport* run : JobRuns(job)) names.push_back(RunName(*run));
  EXPECT_THAT(names, ElementsAre("ring", "ps", "ring randomk:0.0625"));
  const std::vector<std::vector<std::string>> table = VariantTable(job);
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[0][2], "bytes to 75%");
  EXPECT_EQ(table[1][2], "879 KiB");  // 900,000 bytes
  EXPECT_EQ(table[3][0], "ring randomk:0.0625");
  EXPECT_EQ(table[3][2], "128 KiB");  // 131,250 bytes
  std::ostringstream out;
  PrintComparisonTable(job, out);
  EXPECT_THAT(out.str(), HasSubstr("Every run, plain and compressed (--compression_variants)"));
  EXPECT_THAT(out.str(), HasSubstr("bytes sent by then (one worker)"));
  EXPECT_THAT(out.str(), HasSubstr("1.14 MiB"));  // ps: 1,200,000 bytes
}

TEST(BytesToTargetTest, TheReportChartsAccuracyAgainstBytes) {
  const JobComparison job = CompressedJob();
  const std::string chart = AccuracyOverBytesChart(job, "acc-bytes");
  EXPECT_THAT(chart, HasSubstr("Test accuracy against bytes sent, every run"));
  EXPECT_THAT(chart, HasSubstr("mark evaluation ring randomk:0.0625"));
  EXPECT_THAT(chart, HasSubstr("ring 75% at 879 KiB"));
  EXPECT_THAT(chart, HasSubstr("ring randomk:0.0625 75% at 128 KiB"));
  CompareReport report;
  report.jobs.push_back(job);
  const std::string html = RenderHtmlReport(report);
  EXPECT_THAT(html, HasSubstr("id=\"accuracy-bytes-job0\""));
  EXPECT_THAT(html, HasSubstr("Every run, plain and compressed"));
  // Without recorded bytes the chart says so rather than draw at 0.
  EXPECT_THAT(AccuracyOverBytesChart(testing::FashionMnistJob(), "none"),
              HasSubstr("no evaluation recorded the bytes sent"));
}

TEST(CompressionVariantsTest, ParsesCodecsAndRunsEachWhereItFits) {
  const absl::StatusOr<std::vector<Compression>> variants =
      ParseCompressionVariants("randomk:0.01,randomk:0.1,topk:0.01,sign,powersgd:2");
  ASSERT_TRUE(variants.ok()) << variants.status();
  ASSERT_EQ(variants->size(), 5u);
  EXPECT_EQ(CompressionText((*variants)[0]), "randomk:0.01");
  EXPECT_TRUE(RunsCompressed((*variants)[0], SyncMode::kRing));
  EXPECT_FALSE(RunsCompressed((*variants)[0], SyncMode::kPs)) << "random-k is the ring's";
  for (size_t k = 2; k < 4; ++k) {
    EXPECT_TRUE(RunsCompressed((*variants)[k], SyncMode::kPs)) << CompressionText((*variants)[k]);
    EXPECT_FALSE(RunsCompressed((*variants)[k], SyncMode::kRing))
        << CompressionText((*variants)[k]) << " is the server's";
  }
  EXPECT_TRUE(RunsCompressed((*variants)[4], SyncMode::kRing));
  EXPECT_FALSE(RunsCompressed((*variants)[4], SyncMode::kPs)) << "PowerSGD is the ring's";
  EXPECT_FALSE(RunsCompressed(Compression{}, SyncMode::kRing)) << "none is the plain run";
}

TEST(CompressionVariantsTest, RefusesWhatDoesNotRunNamingWhy) {
  const auto refused = [](const char* text) { return ParseCompressionVariants(text).status(); };
  EXPECT_EQ(refused("randomk:0.01,randomk:0.01").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused("randomk:0.01,randomk:0.01").message(), HasSubstr("listed twice"));
  EXPECT_THAT(refused("none").message(), HasSubstr("list codecs only"));
  EXPECT_THAT(refused("zip:3").message(), HasSubstr("--compression_variants"));
  EXPECT_EQ(refused("").code(), absl::StatusCode::kInvalidArgument);
}

TEST(CompressionVariantsTest, ACodecTheJobCannotTakeIsRefusedNamingIt) {
  TrainingOptions job;
  job.staleness = 2;  // compression refuses staleness
  const absl::StatusOr<TrainingOptions> with =
      WithCompression(job, *ParseCompression("randomk:0.01"));
  ASSERT_FALSE(with.ok());
  EXPECT_THAT(with.status().message(), HasSubstr("--compression_variants=randomk:0.01"));
  const absl::StatusOr<TrainingOptions> plain =
      WithCompression(TrainingOptions(), *ParseCompression("randomk:0.01"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(CompressionText(plain->compression), "randomk:0.01");
}

}  // namespace
}  // namespace ringside::cli
