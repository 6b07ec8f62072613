// The terminal table: real numbers in it, the winner line, the model's explanation with the
// job's K, N and S, events, and a well-formed box.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/report/compare_report.h"
#include "cli/report/repeats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Table(const JobComparison& job) {
  std::ostringstream out;
  PrintComparisonTable(job, out);
  return out.str();
}

// The table's text with every run of whitespace (line breaks of wrapped prose included) as one
// space, so assertions on sentences do not depend on where the wrap fell.
std::string Prose(const std::string& table) {
  std::string out;
  for (char c : table) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out += space ? ' ' : c;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) { return absl::StrSplit(text, '\n'); }

size_t CodePoints(const std::string& text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

// The line of the table whose label is `label`.
std::string RowOf(const std::string& table, const std::string& label) {
  for (const std::string& line : Lines(table)) {
    if (line.find("\u2502 " + label + " ") == 0) return line;
  }
  return "";
}

TEST(ComparisonTableTest, ShowsTheMeasuredAndExpectedBytes) {
  const std::string table = Table(testing::SyntheticJob());
  EXPECT_THAT(table, HasSubstr("784,1024,1024,10 on synthetic:4096"));
  EXPECT_THAT(table, HasSubstr("1,863,690 \u00d7 4 B = 7.11 MiB"));
  const std::string per_worker = RowOf(table, "bytes/worker/step");
  EXPECT_THAT(per_worker, HasSubstr("10.7 MiB"));
  EXPECT_THAT(per_worker, HasSubstr("7.11 MiB"));
  EXPECT_THAT(RowOf(table, "  measured/expected"), HasSubstr("1.000"));
  EXPECT_THAT(RowOf(table, "busiest node"), HasSubstr("ps-0 (shard ingress)"));
  EXPECT_THAT(RowOf(table, "busiest node"), HasSubstr("worker-2 (ring link)"));
  EXPECT_THAT(RowOf(table, "  bytes/step"), HasSubstr("14.2 MiB"));
}

TEST(ComparisonTableTest, ShowsTheWireDtypesErrorPerMode) {
  JobComparison job = testing::SyntheticJob();
  EXPECT_THAT(RowOf(Table(job), "gradient error (fp32 wire)"), HasSubstr("exact (fp32)"));
  job.config.wire_dtype = "bf16";
  job.config.element_bytes = 2;
  job.ring.wire_relative_error = 2.66e-3;
  job.ring.wire_error_samples = 20;
  const std::string table = Table(job);
  EXPECT_THAT(table, HasSubstr("1,863,690 \u00d7 2 B"));
  const std::string row = RowOf(table, "gradient error (bf16 wire)");
  EXPECT_THAT(row, HasSubstr("2.66e-03 (max of 20 steps)"));
  EXPECT_THAT(row, HasSubstr("not measured"));  // ps: nothing sampled
}

TEST(ComparisonTableTest, ShowsTimesThroughputAndAccuracy) {
  const std::string table = Table(testing::SyntheticJob());
  EXPECT_THAT(RowOf(table, "step time p50"), HasSubstr("210 ms"));
  EXPECT_THAT(RowOf(table, "step time p50"), HasSubstr("350 ms"));
  EXPECT_THAT(RowOf(table, "step time p95"), HasSubstr("420 ms"));
  EXPECT_THAT(RowOf(table, "compute/sync/update"), HasSubstr("80.0 ms / 120 ms / 10.0 ms"));
  EXPECT_THAT(RowOf(table, "sync share"), HasSubstr("57.1%"));
  EXPECT_THAT(RowOf(table, "sync share"), HasSubstr("75.9%"));
  EXPECT_THAT(RowOf(table, "samples/s"), HasSubstr("301"));
  EXPECT_THAT(RowOf(table, "final loss"), HasSubstr("0.341"));
  EXPECT_THAT(RowOf(table, "accuracy"), HasSubstr("91.2%"));
  EXPECT_THAT(RowOf(table, "final params parity"), HasSubstr("max |\u0394| 2.40e-07"));
}

// Beside each peak RSS, the memory goal and the peak against it.
TEST(ComparisonTableTest, ShowsPeakMemoryAgainstItsBound) {
  const std::string table = Table(testing::SyntheticJob());
  EXPECT_THAT(RowOf(table, "peak RSS, largest worker"), HasSubstr("126 MiB"));
  const std::string worker = RowOf(table, "  bound: state + 64 MiB");
  EXPECT_THAT(worker, HasSubstr("92.4 MiB, peak 1.363\u00d7"));  // ring: 126 MiB
  EXPECT_THAT(worker, HasSubstr("92.4 MiB, peak 0.995\u00d7"));  // ps: 92 MiB
  const std::string shard = RowOf(table, "  bound: range state + 64 MiB");
  EXPECT_THAT(shard, HasSubstr("74.7 MiB, peak 0.268\u00d7"));  // ring: the idle shard, 20 MiB
  EXPECT_THAT(shard, HasSubstr("74.7 MiB, peak 1.741\u00d7"));  // ps: 130 MiB
}

TEST(ComparisonTableTest, NamesTheWinnerAndExplainsWithTheModel) {
  const std::string table = Prose(Table(testing::SyntheticJob()));
  EXPECT_THAT(table, HasSubstr("Winner: ring, 1.67\u00d7 the step rate of ps (95% interval"));
  EXPECT_THAT(table, HasSubstr("deciding: ring: its busiest link carried 10.7 MiB/step"));
  EXPECT_THAT(table, HasSubstr("2(N\u22121)K/N = 2\u00b73\u00b71,863,690/4 \u2248 10.7 MiB"));
  EXPECT_THAT(table, HasSubstr("PS sends K = 7.11 MiB"));
  EXPECT_THAT(table, HasSubstr("N\u00b7K/S = 4\u00b71,863,690/2 \u2248 14.2 MiB"));
  EXPECT_THAT(table, HasSubstr("here N/S = 2"));
  EXPECT_THAT(table, Not(HasSubstr("Events:")));
}

TEST(ComparisonTableTest, EveryBoxLineHasTheSameWidth) {
  const std::string table = Table(testing::SyntheticJob());
  std::vector<size_t> widths;
  for (const std::string& line : Lines(table)) {
    const std::string first = line.substr(0, 3);
    if (first == "\u2502" || first == "\u250c" || first == "\u251c" || first == "\u2514") {
      widths.push_back(CodePoints(line));
    }
  }
  ASSERT_GE(widths.size(), 20u);
  for (size_t width : widths) EXPECT_EQ(width, widths.front());
}

TEST(ComparisonTableTest, SaysWhenAWorkerWasLost) {
  const std::string table = Table(testing::IrisJobWithLostWorker());
  EXPECT_THAT(RowOf(table, "workers at end"), HasSubstr("3 of 4 (1 lost)"));
  EXPECT_THAT(RowOf(table, "accuracy"), HasSubstr("97.3%"));
  EXPECT_THAT(table, HasSubstr("Events:"));
  EXPECT_THAT(Prose(table), HasSubstr("ring: worker-3 exited (killed by signal 9) at ~step 40"));
  EXPECT_THAT(Prose(table), HasSubstr("Winner: ps, 1.31\u00d7 the step rate of ring"));
}

TEST(ComparisonTableTest, AFailedModeHasNoWinner) {
  JobComparison job = testing::SyntheticJob();
  job.ps.completed = false;
  job.ps.failure = "ps-1 exited (killed by signal 9)";
  const std::string table = Table(job);
  EXPECT_THAT(RowOf(table, "status"), HasSubstr("FAILED"));
  EXPECT_THAT(Prose(table),
              HasSubstr("No winner: the ps run failed (ps-1 exited (killed by signal 9))"));
  EXPECT_THAT(Prose(table), HasSubstr("ps: FAILED: ps-1 exited"));
  EXPECT_THAT(RowOf(table, "samples/s"), HasSubstr("\u2014"));
}

TEST(ComparisonTableTest, AnUnreportedWorldIsADashNotALoss) {
  JobComparison job = testing::SyntheticJob();
  job.ring.final_world = 0;
  const std::string table = Table(job);
  EXPECT_THAT(RowOf(table, "workers at end"), HasSubstr("\u2014"));
  EXPECT_THAT(table, Not(HasSubstr("lost")));
  EXPECT_THAT(table, Not(HasSubstr("Events:")));
}

TEST(ComparisonTableTest, StepTimesThatOverlapAreNoSignificantDifference) {
  JobComparison job = testing::SyntheticJob();
  job.ps.step_seconds = testing::StepTimes(0.212, 0.2, 95);
  EXPECT_THAT(Prose(Table(job)), HasSubstr("No significant difference on this run set"));
}

TEST(ComparisonTableTest, TheStepTimeDecidesAlsoWithoutSamplesPerSecond) {
  JobComparison job = testing::SyntheticJob();
  job.ring.samples_per_second = job.ps.samples_per_second = 0;
  EXPECT_THAT(Prose(Table(job)), HasSubstr("Winner: ring, 1.67\u00d7 the step rate of ps"));
}

TEST(ComparisonTableTest, RepeatsShowTheirRangeBesideTheMedian) {
  JobComparison first = testing::SyntheticJob(), second = first;
  second.ring.step_p50 = 0.230;
  second.ring.samples_per_second = 280;
  const std::string table = Table(MergeRounds({first, second}));
  EXPECT_THAT(RowOf(table, "repeats"), HasSubstr("2 runs per mode, alternated ring, ps"));
  EXPECT_THAT(RowOf(table, "step time p50"), HasSubstr("220 ms (210 ms\u2013230 ms)"));
  EXPECT_THAT(RowOf(table, "samples/s"), HasSubstr("(280\u2013301)"));
  EXPECT_THAT(RowOf(table, "warm-up (not in step figures)"), HasSubstr("5 steps, 2.50 s"));
}

TEST(ComparisonTableTest, WrapsProseAtOneHundredColumns) {
  for (const std::string& line : Lines(Table(testing::SyntheticJob()))) {
    const bool in_box = line.rfind("\u2502", 0) == 0 || line.rfind("\u250c", 0) == 0 ||
                        line.rfind("\u251c", 0) == 0 || line.rfind("\u2514", 0) == 0;
    if (!in_box) {
      EXPECT_LE(CodePoints(line), 100u) << line;
    }
  }
}

TEST(ComparisonTableTest, PredictedRowsOnlyWithAProbe) {
  JobComparison job = testing::SyntheticJob();
  EXPECT_THAT(Table(job), Not(HasSubstr("step p50 predicted")));
  job.ring.predicted_step_seconds = job.ring.step_p50 / 2;
  job.ring.predicted_sync_seconds = job.ring.sync_p50 / 2;
  const std::string table = Table(job);
  EXPECT_THAT(table, HasSubstr("step p50 predicted"));
  EXPECT_THAT(table, HasSubstr("sync p50 predicted"));
  EXPECT_THAT(table, HasSubstr("2.000"));  // measured/predicted
}

}  // namespace
}  // namespace ringside::cli
