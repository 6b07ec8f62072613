// The --json document against docs/contract.md: top-level fields describe the first job,
// `jobs` holds every job, every figure is a number.
#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "cli/report/repeats.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using nlohmann::json;

// The contract's fields of one mode, as JSON pointers.
const std::vector<std::string> kModeNumbers = {
    "/bytes_per_worker_per_step/measured",
    "/bytes_per_worker_per_step/expected",
    "/busiest_node/bytes_per_step",
    "/step_seconds/p50",
    "/step_seconds/p95",
    "/sync_share",
    "/samples_per_second",
    "/final_loss",
    "/accuracy",
};

TEST(CompareJsonTest, HasTheContractFieldsAsNumbers) {
  const json doc = CompareJson(testing::SampleReport());
  for (const char* field : {"workers", "ps_shards", "parameters", "steps"}) {
    EXPECT_TRUE(doc["config"][field].is_number()) << field;
  }
  EXPECT_TRUE(doc["config"]["model"].is_string());
  EXPECT_TRUE(doc["config"]["device"].is_string());
  for (const char* mode : {"ring", "ps"}) {
    const json& m = doc["modes"][mode];
    for (const std::string& pointer : kModeNumbers) {
      EXPECT_TRUE(m.at(json::json_pointer(pointer)).is_number()) << mode << pointer;
    }
    EXPECT_TRUE(m["busiest_node"]["name"].is_string()) << mode;
  }
  EXPECT_TRUE(doc["parity"]["max_abs_param_diff"].is_number());
}

TEST(CompareJsonTest, TopLevelDescribesTheFirstJob) {
  const json doc = CompareJson(testing::SampleReport());
  EXPECT_EQ(doc["config"]["workers"], 4);
  EXPECT_EQ(doc["config"]["ps_shards"], 2);
  EXPECT_EQ(doc["config"]["model"], "784,1024,1024,10");
  EXPECT_EQ(doc["config"]["parameters"], 1863690);
  EXPECT_EQ(doc["config"]["device"], "cpu");
  EXPECT_EQ(doc["config"]["memory_bound_bytes"]["worker"], 96927904);
  EXPECT_EQ(doc["config"]["memory_bound_bytes"]["shard"], 78291004);
  const json& ring = doc["modes"]["ring"];
  EXPECT_EQ(ring["mode"], "ring");
  EXPECT_EQ(ring["bytes_per_worker_per_step"]["measured"], 11182140.0);
  EXPECT_EQ(ring["bytes_per_worker_per_step"]["expected"], 11182140.0);
  EXPECT_EQ(ring["busiest_node"]["name"], "worker-2");
  EXPECT_DOUBLE_EQ(ring["step_seconds"]["p50"].get<double>(), 0.210);
  EXPECT_DOUBLE_EQ(ring["samples_per_second"].get<double>(), 301.2);
  EXPECT_EQ(ring["links"].size(), 4u);
  const json& ps = doc["modes"]["ps"];
  EXPECT_EQ(ps["busiest_node"]["name"], "ps-0");
  EXPECT_EQ(ps["busiest_node"]["bytes_per_step"], 14909520.0);
  EXPECT_DOUBLE_EQ(ps["accuracy"].get<double>(), 0.912);
  EXPECT_EQ(ps["links"].size(), 16u);
  EXPECT_EQ(ps["links"][0]["src"], "worker-0");
  EXPECT_EQ(ps["links"][0]["dst"], "ps-0");
  EXPECT_EQ(ps["links"][0]["bytes_per_step"], 3727380.0);
  EXPECT_DOUBLE_EQ(doc["parity"]["max_abs_param_diff"].get<double>(), 2.4e-7);
  EXPECT_EQ(doc["winner"]["mode"], "ring");
  EXPECT_NEAR(doc["winner"]["ratio"].get<double>(), 0.350 / 0.210, 1e-12);
  EXPECT_EQ(doc["winner"]["basis"], "step_seconds");
  EXPECT_EQ(doc["winner"]["repeats"], 1);
  EXPECT_EQ(doc["winner"]["interval"]["over"], "steps");
  EXPECT_GT(doc["winner"]["interval"]["low"].get<double>(), 1.0);
  EXPECT_EQ(doc["winner"]["interval"]["confidence"], 0.95);
  EXPECT_EQ(doc["winner"]["deciding_term"]["term"], "bandwidth");
  ASSERT_EQ(doc["winner"]["per_repeat"].size(), 1u);
  EXPECT_EQ(doc["winner"]["per_repeat"][0]["mode"], "ring");
  // Each mode keeps its one run, its spread and its warm-up.
  EXPECT_EQ(doc["modes"]["ring"]["repeats"].size(), 1u);
  EXPECT_EQ(doc["modes"]["ring"]["spread"]["step_seconds_p50"]["median"], 0.210);
  EXPECT_EQ(doc["modes"]["ring"]["warmup"]["steps"], 5);
  EXPECT_EQ(doc["modes"]["ring"]["synchronous"], true);
}

TEST(CompareJsonTest, JobsHoldEveryJobInTheSameShape) {
  const json doc = CompareJson(testing::SampleReport());
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0], JobJson(testing::SyntheticJob()));
  const json& iris = doc["jobs"][1];
  EXPECT_EQ(iris["config"]["data"], "iris");
  EXPECT_EQ(iris["modes"]["ring"]["final_world"], 3);
  EXPECT_EQ(iris["modes"]["ring"]["events"][0],
            "worker-3 exited (killed by signal 9) at ~step 40; continued with 3 workers");
  EXPECT_EQ(iris["winner"]["mode"], "ps");
}

TEST(CompareJsonTest, RepeatsKeepEveryRunItsSpreadAndEachRepeatsVerdict) {
  JobComparison first = testing::SyntheticJob(), second = first, third = first;
  second.ring.step_p50 = 0.200;
  third.ring.step_p50 = 0.230;
  const json doc = JobJson(MergeRounds({first, second, third}));
  EXPECT_EQ(doc["config"]["repeats"], 3);
  const json& ring = doc["modes"]["ring"];
  ASSERT_EQ(ring["repeats"].size(), 3u);
  EXPECT_EQ(ring["repeats"][1]["step_seconds"]["p50"], 0.200);
  EXPECT_EQ(ring["step_seconds"]["p50"], 0.210);  // the median, where it always was
  EXPECT_EQ(ring["spread"]["step_seconds_p50"]["min"], 0.200);
  EXPECT_EQ(ring["spread"]["step_seconds_p50"]["max"], 0.230);
  EXPECT_EQ(ring["spread"]["step_seconds_p50"]["count"], 3);
  EXPECT_EQ(doc["winner"]["interval"]["over"], "repeats");
  EXPECT_EQ(doc["winner"]["per_repeat"].size(), 3u);
  EXPECT_EQ(doc["winner"]["mode"], "ring");
}

TEST(CompareJsonTest, UnmeasuredFiguresAreNullNotStrings) {
  JobComparison job = testing::SyntheticJob();
  job.parity_checked = false;
  job.ps.completed = false;
  job.ps.failure = "ps-1 exited";
  const json doc = CompareJson({{job}});
  EXPECT_TRUE(doc["parity"]["max_abs_param_diff"].is_null());
  EXPECT_EQ(doc["parity"]["checked"], false);
  EXPECT_EQ(doc["modes"]["ps"]["completed"], false);
  EXPECT_EQ(doc["modes"]["ps"]["failure"], "ps-1 exited");
  EXPECT_TRUE(doc["winner"]["mode"].is_null());
}

// --wire_dtype: the config names it; a mode's sampled error is a number, or null where nothing
// was sampled (fp32 on the wire), and a sweep point carries its own.
TEST(CompareJsonTest, TheWireDtypeAndItsErrorPerModeAndSweepPoint) {
  JobComparison job = testing::SyntheticJob();
  const json plain = CompareJson({{job}});
  EXPECT_EQ(plain["config"]["wire_dtype"], "fp32");
  EXPECT_TRUE(plain["modes"]["ring"]["wire_relative_error"].is_null());
  EXPECT_EQ(plain["modes"]["ring"]["wire_error_samples"], 0);
  job.config.wire_dtype = "fp16";
  job.config.element_bytes = 2;
  job.ring.wire_relative_error = 3.5e-4;
  job.ring.wire_error_samples = 20;
  job.ps.wire_relative_error = 2.5e-4;
  job.ps.wire_error_samples = 20;
  ScalingPoint point;
  point.workers = 4;
  point.wire_relative_error = 4.5e-4;
  job.ring.scaling = {point};
  const json doc = CompareJson({{job}});
  EXPECT_EQ(doc["config"]["wire_dtype"], "fp16");
  EXPECT_EQ(doc["config"]["element_bytes"], 2);
  EXPECT_EQ(doc["modes"]["ring"]["wire_relative_error"], 3.5e-4);
  EXPECT_EQ(doc["modes"]["ps"]["wire_relative_error"], 2.5e-4);
  EXPECT_EQ(doc["modes"]["ps"]["wire_error_samples"], 20);
  EXPECT_EQ(doc["modes"]["ring"]["scaling"][0]["wire_relative_error"], 4.5e-4);
}

// A process that ended without being asked to: how, where its whole log is, and its last lines
// as printed (already quoted); none is an empty array, never a missing field.
TEST(CompareJsonTest, ProcessFailuresSayHowAndWhereTheLogIs) {
  CompareReport report = testing::SampleReport();
  report.jobs[0].ps.process_failures.push_back(
      ProcessFailure{"worker-0",
                     4242,
                     "exit code 1",
                     "/tmp/ringside-compare-x/worker-0.log",
                     {"\"worker-0: generation 1 failed at step 0\"", "\"ringside-worker: ...\""}});
  const json doc = CompareJson(report);
  const json& failures = doc["modes"]["ps"]["process_failures"];
  ASSERT_EQ(failures.size(), 1u) << failures;
  EXPECT_EQ(failures[0]["name"], "worker-0");
  EXPECT_EQ(failures[0]["pid"], 4242);
  EXPECT_EQ(failures[0]["exit"], "exit code 1");
  EXPECT_EQ(failures[0]["log"], "/tmp/ringside-compare-x/worker-0.log");
  ASSERT_EQ(failures[0]["last_lines"].size(), 2u);
  EXPECT_EQ(failures[0]["last_lines"][0], "\"worker-0: generation 1 failed at step 0\"");
  EXPECT_TRUE(doc["modes"]["ring"]["process_failures"].is_array());
  EXPECT_TRUE(doc["modes"]["ring"]["process_failures"].empty());
}

TEST(CompareJsonTest, AnEmptyReportHasNoJobs) {
  const json doc = CompareJson({});
  EXPECT_EQ(doc, json({{"jobs", json::array()}}));
}

TEST(CompareJsonTest, WritesAFileThatParsesBack) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("compare-json-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  CompareReport report = testing::SampleReport();
  report.jobs[0].ps.failure = "log line with a bad byte: \xff";  // not UTF-8: must not throw
  ASSERT_TRUE(WriteCompareJsonFile(report, dir->File("compare.json")).ok());
  absl::StatusOr<std::string> text = ReadFileToString(dir->File("compare.json"));
  ASSERT_TRUE(text.ok()) << text.status();
  const json doc = json::parse(*text);
  EXPECT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["modes"]["ring"]["bytes_per_worker_per_step"]["measured"], 11182140.0);
}

// --probe: every measured step and sync has its prediction beside it, and the ratio.
TEST(CompareJsonTest, PredictedColumnBesideTheMeasurement) {
  CompareReport report = testing::SampleReport();
  ModeReport& ring = report.jobs[0].ring;
  ring.step_p50 = 0.1;
  ring.sync_p50 = 0.02;
  ring.predicted_step_seconds = ring.step_p50 / 2;
  ring.predicted_sync_seconds = ring.sync_p50 / 4;
  const json doc = CompareJson(report);
  const json& predicted = doc["modes"]["ring"]["predicted"];
  ASSERT_TRUE(predicted.is_object()) << doc["modes"]["ring"].dump();
  EXPECT_EQ(predicted["step_seconds"], ring.step_p50 / 2);
  EXPECT_EQ(predicted["sync_seconds"], ring.sync_p50 / 4);
  EXPECT_DOUBLE_EQ(predicted["measured_over_predicted_step"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(predicted["measured_over_predicted_sync"].get<double>(), 4.0);
  // Without a probe there is no prediction to show.
  EXPECT_FALSE(doc["modes"]["ps"].contains("predicted"));
}

}  // namespace
}  // namespace ringside::cli
