// `ringside compare --workers=1,2 --timeline=FILE` end to end: the real binary sweeps two
// cluster sizes in both modes; its JSON has one scaling record per size, loss over time for
// both modes, and the timeline is a Chrome trace whose phases add up to the step times the
// workers measured.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using nlohmann::json;

constexpr int kSteps = 12;

// Runs `ringside compare` with `flags` to its end; the exit status and the log.
std::pair<absl::Status, std::string> RunCompare(const launch::TempDir& dir,
                                                const std::vector<std::string>& flags) {
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "compare"};
  spawn.argv.insert(spawn.argv.end(), flags.begin(), flags.end());
  spawn.log_path = dir.File("compare.log");
  auto process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return {process.status(), ""};
  auto exit = process->Wait(absl::Seconds(300));
  const std::string log = ReadFileToString(spawn.log_path).value_or("");
  if (!exit.ok()) return {exit.status(), log};
  return {exit->ok() ? absl::OkStatus() : absl::InternalError(exit->ToString()), log};
}

json ReadJson(const launch::TempDir& dir, const std::string& name) {
  const json doc = json::parse(ReadFileToString(dir.File(name)).value_or(""), nullptr, false);
  EXPECT_TRUE(doc.is_object()) << name << " is not a JSON object";
  return doc;
}

void ExpectOneScalingRecordPerWorkerCount(const launch::TempDir& dir) {
  SCOPED_TRACE("scaling records");
  const json doc = ReadJson(dir, "out.json");
  // The contract's fields describe the largest size.
  EXPECT_EQ(doc["config"]["workers"], 2);
  for (const char* mode : {"ring", "ps"}) {
    SCOPED_TRACE(mode);
    const json& m = doc["modes"][mode];
    EXPECT_TRUE(m["completed"].get<bool>());
    EXPECT_GT(m["samples_per_second"].get<double>(), 0);
    const json& scaling = m["scaling"];
    ASSERT_TRUE(scaling.is_array());
    ASSERT_EQ(scaling.size(), 2u);
    EXPECT_EQ(scaling[0]["workers"], 1);
    EXPECT_EQ(scaling[1]["workers"], 2);
    EXPECT_EQ(m["scaling_baseline_workers"], 1);
    EXPECT_EQ(scaling[0]["efficiency"].get<double>(), 1.0);
    for (const json& point : scaling) {
      EXPECT_TRUE(point["completed"].get<bool>()) << point;
      EXPECT_GT(point["samples_per_second"].get<double>(), 0) << point;
      EXPECT_GT(point["efficiency"].get<double>(), 0) << point;
      EXPECT_GT(point["step_seconds_p50"].get<double>(), 0) << point;
      const json& phases = point["phase_seconds"];
      EXPECT_NEAR(point["step_seconds_mean"].get<double>(),
                  phases["compute"].get<double>() + phases["sync"].get<double>() +
                      phases["update"].get<double>(),
                  1e-12)
          << point;
      EXPECT_GT(point["model"]["step_seconds"].get<double>(), 0) << point;
      EXPECT_EQ(point["ps_shards"], 1);
    }
    // The efficiency is what the samples/s say it is.
    const double s1 = scaling[0]["samples_per_second"], s2 = scaling[1]["samples_per_second"];
    EXPECT_NEAR(scaling[1]["efficiency"].get<double>(), s2 / (2 * s1), 1e-9);
    // The largest size is the run the rest of the mode's report describes.
    EXPECT_EQ(scaling[1]["samples_per_second"], m["samples_per_second"]);
  }
}

void ExpectLossOverTimeForBothModes(const launch::TempDir& dir) {
  SCOPED_TRACE("loss over time");
  const json doc = ReadJson(dir, "out.json");
  for (const char* mode : {"ring", "ps"}) {
    SCOPED_TRACE(mode);
    const json& loss = doc["modes"][mode]["loss_over_time"];
    ASSERT_EQ(loss.size(), static_cast<size_t>(kSteps));
    double last = 0;
    for (size_t i = 0; i < loss.size(); ++i) {
      EXPECT_EQ(loss[i]["step"], static_cast<int>(i));
      EXPECT_GT(loss[i]["seconds"].get<double>(), last) << "time moves forward";
      last = loss[i]["seconds"].get<double>();
      EXPECT_GT(loss[i]["loss"].get<double>(), 0);
    }
  }
}

void ExpectAScalingChartPerModeAndTheLossChart(const launch::TempDir& dir) {
  const std::string html = ReadFileToString(dir.File("out.html")).value_or("");
  for (const char* id : {"scaling-ring-job0", "scaling-ps-s1-job0", "loss-time-job0"}) {
    EXPECT_NE(html.find(absl::StrCat("id=\"", id, "\"")), std::string::npos) << id;
  }
  EXPECT_NE(html.find("efficiency"), std::string::npos);
}

// The trace: Chrome's format, one process per worker of each cluster, and per step the
// phases back to back adding up to the step, which is the step time the worker measured.
void ExpectATraceWhosePhasesAddUpToTheSteps(const launch::TempDir& dir) {
  SCOPED_TRACE("timeline");
  const json trace = ReadJson(dir, "timeline.json");
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<int, std::string> names;
  // (pid, step) -> lane -> (ts, dur)
  std::map<std::pair<int, int64_t>, std::map<int, std::pair<int64_t, int64_t>>> steps;
  std::map<int, int> regroups;
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string()) << e;
    ASSERT_TRUE(e["pid"].is_number_integer()) << e;
    const int pid = e["pid"];
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") names[pid] = e["args"]["name"];
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e;
    ASSERT_TRUE(e["tid"].is_number_integer() && e["ts"].is_number_integer() &&
                e["dur"].is_number_integer())
        << e;
    EXPECT_GE(e["ts"].get<int64_t>(), 0);
    if (e["tid"] == 4) {
      ++regroups[pid];
      continue;
    }
    auto& lanes = steps[{pid, e["args"]["step"].get<int64_t>()}];
    EXPECT_FALSE(lanes.count(e["tid"].get<int>())) << "one event per lane and step: " << e;
    lanes[e["tid"].get<int>()] = {e["ts"].get<int64_t>(), e["dur"].get<int64_t>()};
  }
  // ps N=1, ring N=1, ps N=2 (2 workers), ring N=2 (2 workers).
  ASSERT_EQ(names.size(), 6u);
  std::multiset<std::string> clusters;
  for (const auto& [pid, name] : names) clusters.insert(name.substr(0, name.find(' ', 5)));
  EXPECT_EQ(clusters, (std::multiset<std::string>{"ps N=1", "ring N=1", "ps N=2", "ps N=2",
                                                  "ring N=2", "ring N=2"}));
  std::map<int, std::vector<int64_t>> step_us;  // per pid
  for (const auto& [key, lanes] : steps) {
    SCOPED_TRACE(absl::StrCat(names[key.first], " step ", key.second));
    ASSERT_EQ(lanes.size(), 4u) << "step, compute, sync and update";
    const auto& [step_ts, step_dur] = lanes.at(0);
    const auto& [compute_ts, compute_dur] = lanes.at(1);
    const auto& [sync_ts, sync_dur] = lanes.at(2);
    const auto& [update_ts, update_dur] = lanes.at(3);
    EXPECT_EQ(compute_ts, step_ts);
    EXPECT_EQ(sync_ts, compute_ts + compute_dur);
    EXPECT_EQ(update_ts, sync_ts + sync_dur);
    EXPECT_EQ(compute_dur + sync_dur + update_dur, step_dur);
    step_us[key.first].push_back(step_dur);
  }
  for (const auto& [pid, name] : names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(step_us[pid].size(), static_cast<size_t>(kSteps));
    EXPECT_GE(regroups[pid], 1) << "every worker regroups into its first generation";
  }
  // The step time each worker measured is the one compare read for its p50: one of the ring
  // N=2 workers (compare reads the first that survived) has a median step, over the steps after
  // the warm-up the JSON names, equal to the JSON's p50, within the microsecond rounding of three
  // phases.
  const json ring = ReadJson(dir, "out.json")["modes"]["ring"];
  const double p50 = ring["step_seconds"]["p50"];
  ASSERT_TRUE(ring["warmup"]["steps"].is_number_integer()) << ring["warmup"];
  const int64_t warmup = ring["warmup"]["steps"];
  EXPECT_EQ(warmup, 5) << "12 steps are enough to leave the first 5 out";
  bool matched = false;
  for (const auto& [pid, name] : names) {
    if (name.rfind("ring N=2", 0) != 0) continue;
    ASSERT_GT(step_us[pid].size(), static_cast<size_t>(warmup)) << name;
    std::vector<int64_t> sorted(step_us[pid].begin() + warmup, step_us[pid].end());
    std::sort(sorted.begin(), sorted.end());
    const size_t index = static_cast<size_t>(0.5 * (sorted.size() - 1) + 0.5);
    matched |= std::abs(sorted[index] - p50 * 1e6) <= 2.0;
  }
  EXPECT_TRUE(matched) << "no ring N=2 worker's median step is the JSON's p50 " << p50;
}

// One sweep (four small clusters, the expensive part) checked four ways.
TEST(SweepTest, JsonReportAndTimelineOfASweep) {
  auto dir = launch::TempDir::Create("ringside-sweep-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto [status, log] = RunCompare(
      *dir, {"--model=4,16,3", absl::StrCat("--steps=", kSteps), "--workers=2,1", "--ps_shards=1",
             "--insecure", "--json=" + dir->File("out.json"), "--report=" + dir->File("out.html"),
             "--timeline=" + dir->File("timeline.json")});
  // compare's output names any process that ended with its log's last lines, and the cluster
  // directory it kept: shown, with this test's files kept, whenever a check below fails.
  ASSERT_TRUE(status.ok()) << status << "\n" << log;
  ExpectOneScalingRecordPerWorkerCount(*dir);
  ExpectLossOverTimeForBothModes(*dir);
  ExpectAScalingChartPerModeAndTheLossChart(*dir);
  ExpectATraceWhosePhasesAddUpToTheSteps(*dir);
  if (HasFailure()) {
    dir->Keep();
    ADD_FAILURE() << "ringside compare's output (its files kept in " << dir->path() << "):\n"
                  << log;
  }
}

TEST(SweepFlagsTest, BadListsFailAtOnceNamingTheFlag) {
  auto dir = launch::TempDir::Create("ringside-sweep-test-");
  ASSERT_TRUE(dir.ok());
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--workers=1,x"}, {"--workers=2,2"}, {"--ps_shards=0"}, {"--timeline_capacity=1"}}) {
    auto [status, log] = RunCompare(*dir, flags);
    EXPECT_FALSE(status.ok()) << flags[0];
    const std::string flag = flags[0].substr(0, flags[0].find('='));
    EXPECT_NE(log.find(flag), std::string::npos) << log;
    EXPECT_EQ(log.find("started"), std::string::npos) << "no cluster starts: " << log;
  }
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "up", "--workers=1,2", "--insecure"};
  spawn.log_path = dir->File("up.log");
  auto up = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(up.ok());
  auto exit = up->Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok());
  EXPECT_FALSE(exit->ok());
  EXPECT_NE(ReadFileToString(spawn.log_path).value_or("").find("only in compare"),
            std::string::npos);
}

}  // namespace
}  // namespace ringside
