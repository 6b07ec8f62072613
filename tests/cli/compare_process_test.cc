// `ringside compare` end to end: the real binary starts its clusters, and its JSON
// must agree with the cost model, between the modes, and with Iris's expected accuracy.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/health_check.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/flags/security_flags.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"
#include "tests/support/idx_files.h"
#include "tests/support/poll.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

// What `ringside up`'s ready file says a client needs to reach the cluster (client_flags: the
// operator's certificate, or --insecure), as `ringside ctl` would read those flags.
absl::StatusOr<TransportSecurity> ClientSecurity(const nlohmann::json& ready) {
  SecurityFlags flags;
  for (const nlohmann::json& flag : ready["client_flags"]) {
    const std::string text = flag.get<std::string>();
    const std::string value = text.substr(text.find('=') + 1);
    if (text.rfind("--tls_ca=", 0) == 0) flags.tls.ca = value;
    if (text.rfind("--tls_cert=", 0) == 0) flags.tls.cert = value;
    if (text.rfind("--tls_key=", 0) == 0) flags.tls.key = value;
    if (text == "--insecure") flags.insecure = true;
  }
  return ResolveSecurityFlags(flags);
}

// The command after `prefix` on a line of `log`, split into argv.
// Runs `ringside compare` with `flags` and --json=dir/out.json to its end (within 4 minutes), its
// log in dir/compare.log; the JSON it wrote, or why not with the log's last lines.
absl::StatusOr<nlohmann::json> RunCompareToJson(const launch::TempDir& dir,
                                                std::vector<std::string> flags) {
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "compare", "--json=" + dir.File("out.json")};
  spawn.argv.insert(spawn.argv.end(), flags.begin(), flags.end());
  spawn.log_path = dir.File("compare.log");
  ASSIGN_OR_RETURN(launch::Subprocess process, launch::Subprocess::Spawn(spawn));
  absl::StatusOr<launch::ExitStatus> exit = process.Wait(absl::Seconds(240));
  if (!exit.ok() || !exit->ok()) {
    return absl::InternalError(
        absl::StrCat("ringside compare failed:\n", launch::TailOfFile(spawn.log_path, 30)));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(dir.File("out.json")));
  return nlohmann::json::parse(text);
}

// A small Fashion-MNIST set (200 training and 50 test images of 4×4 pixels) written into `dir`,
// and the flags of a job that learns it (each test adds its steps, workers and target); empty
// when the set could not be written.
std::vector<std::string> SmallFashionMnistJob(const launch::TempDir& dir) {
  const std::string data = dir.File("data");
  if (mkdir(data.c_str(), 0755) != 0 || !testing::WriteTinyFashionMnist(data, 200, 50)) return {};
  return {"--model=20,32,10", "--data=fashion-mnist:" + data, "--eval_every=10", "--batch_size=16",
          "--ps_shards=2"};
}

std::vector<std::string> Plus(std::vector<std::string> flags,
                              const std::vector<std::string>& more) {
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

std::vector<std::string> PrintedCommand(const std::string& log, const std::string& prefix) {
  const size_t at = log.find(prefix);
  if (at == std::string::npos) return {};
  const std::string command =
      log.substr(at + prefix.size(), log.find('\n', at) - at - prefix.size());
  return absl::StrSplit(command, ' ', absl::SkipEmpty());
}

TEST(CompareCommandTest, MeasuredBytesMatchTheModelAndTheModesAgree) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside",
                "compare",
                "--model=4,16,3",
                "--steps=300",
                "--workers=3",
                "--ps_shards=2",
                "--json=" + dir->File("out.json"),
                "--report=" + dir->File("out.html")};
  spawn.log_path = dir->File("compare.log");
  auto process = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(process.ok()) << process.status();
  auto exit = process->Wait(absl::Seconds(240));
  ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << launch::TailOfFile(spawn.log_path, 20);
  ASSERT_TRUE(exit->ok()) << exit->ToString() << "\n" << launch::TailOfFile(spawn.log_path, 20);

  const nlohmann::json json =
      nlohmann::json::parse(ReadFileToString(dir->File("out.json")).value());
  EXPECT_EQ(json["config"]["workers"], 3);
  EXPECT_EQ(json["config"]["ps_shards"], 2);
  for (const char* mode : {"ring", "ps"}) {
    SCOPED_TRACE(mode);
    const nlohmann::json& m = json["modes"][mode];
    const double measured = m["bytes_per_worker_per_step"]["measured"];
    const double expected = m["bytes_per_worker_per_step"]["expected"];
    ASSERT_GT(expected, 0);
    EXPECT_NEAR(measured / expected, 1.0, 0.01);
    EXPECT_GE(m["accuracy"].get<double>(), 0.95);
    EXPECT_GT(m["busiest_node"]["bytes_per_step"].get<double>(), 0);
    EXPECT_GT(m["step_seconds"]["p95"].get<double>(), 0);
    // Every process of the run, each with the peak the kernel measured (any live process
    // touches more than 1 MiB: its libraries alone do).
    std::vector<std::string> names;
    for (const nlohmann::json& p : m["processes"]) {
      names.push_back(p["name"]);
      EXPECT_GT(p["peak_rss_bytes"].get<int64_t>(), int64_t{1} << 20) << p.dump();
    }
    EXPECT_EQ(absl::StrJoin(names, ","), "controller,ps-0,ps-1,worker-0,worker-1,worker-2");
  }
  // Relative to the largest parameter: the two modes sum the same shares in different orders.
  ASSERT_TRUE(json["parity"]["max_rel_param_diff"].is_number());
  EXPECT_LE(json["parity"]["max_rel_param_diff"].get<double>(), 1e-5);
  EXPECT_GE(json["parity"]["max_abs_param_diff"].get<double>(), 0.0);
  EXPECT_GT(ReadFileToString(dir->File("out.html")).value().size(), 1000u);
}

// Real data end to end: Fashion-MNIST's IDX files (a small set the test writes) through both
// modes; worker-0's evaluations become each mode's test accuracy over time and time to target.
TEST(CompareCommandTest, TimesEachModeToATestAccuracyOnFashionMnist) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> small = SmallFashionMnistJob(*dir);
  ASSERT_FALSE(small.empty());
  const absl::StatusOr<nlohmann::json> run = RunCompareToJson(
      *dir, Plus(small, {"--steps=40", "--workers=2", "--target_accuracy=0.5",
                         "--ps_window_bytes=65536", "--report=" + dir->File("out.html")}));
  ASSERT_TRUE(run.ok()) << run.status();
  const nlohmann::json& json = *run;
  EXPECT_EQ(json["config"]["test_set"], true);
  EXPECT_EQ(json["config"]["eval_every"], 10);
  EXPECT_EQ(json["config"]["target_accuracy"], 0.5);
  EXPECT_EQ(json["config"]["ps_window_bytes"], 65536);  // the window the workers were given
  for (const char* mode : {"ring", "ps"}) {
    SCOPED_TRACE(mode);
    const nlohmann::json& m = json["modes"][mode];
    const nlohmann::json& points = m["accuracy_over_time"];
    ASSERT_FALSE(points.empty()) << m.dump();
    nlohmann::json first_at_target;
    for (size_t i = 0; i < points.size(); ++i) {
      const nlohmann::json& p = points[i];
      EXPECT_LE(p["step"].get<int64_t>(), 40);
      if (std::string(mode) == "ring") {
        EXPECT_EQ(p["step"].get<int64_t>() % 10, 0) << p.dump();
      }
      if (i > 0) {
        EXPECT_GT(p["step"], points[i - 1]["step"]);
        EXPECT_GE(p["seconds"].get<double>(), points[i - 1]["seconds"].get<double>());
      }
      if (first_at_target.is_null() && p["test_accuracy"].get<double>() >= 0.5) {
        first_at_target = p;
      }
    }
    EXPECT_EQ(points.back()["step"], 40) << "the final parameters are evaluated";
    EXPECT_EQ(m["test_accuracy"], points.back()["test_accuracy"]);
    EXPECT_DOUBLE_EQ(m["test_accuracy"].get<double>(), m["accuracy"].get<double>())
        << "the result's accuracy is on the test set too, for the same parameters";
    EXPECT_GT(m["test_accuracy"].get<double>(), 0.5) << "a learnable set; chance is 10%";
    if (first_at_target.is_null()) {
      EXPECT_TRUE(m["seconds_to_target"].is_null());
    } else {
      EXPECT_EQ(m["seconds_to_target"], first_at_target["seconds"]);
      EXPECT_EQ(m["steps_to_target"], first_at_target["step"]);
    }
    EXPECT_GT(m["eval_seconds_mean"].get<double>(), 0);
  }
  const std::string html = ReadFileToString(dir->File("out.html")).value();
  EXPECT_NE(html.find("id=\"accuracy-time-job0\""), std::string::npos);
  EXPECT_NE(ReadFileToString(dir->File("compare.log")).value().find("time to 50% test accuracy"),
            std::string::npos)
      << launch::TailOfFile(dir->File("compare.log"), 40);
}

// --ps_variants with a straggler (issue 28's comparison, in miniature): each variant trains on a
// cluster of its own against the one ring run, and its settings reach the processes: under
// async the shards run the optimiser, so the workers' update phase is zero, as it is not in the
// synchronous variants.
TEST(CompareCommandTest, EachPsVariantTrainsOnItsOwnClusterAgainstTheSameRing) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> small = SmallFashionMnistJob(*dir);
  ASSERT_FALSE(small.empty());
  const absl::StatusOr<nlohmann::json> run = RunCompareToJson(
      *dir,
      Plus(small, {"--steps=20", "--workers=3", "--target_accuracy=0.3", "--straggler=worker-2:2",
                   "--ps_variants=sync,backup_workers=1,async,sync/no_straggler",
                   "--report=" + dir->File("out.html")}));
  ASSERT_TRUE(run.ok()) << run.status();
  const nlohmann::json& variants = (*run)["modes"]["ps_variants"];
  ASSERT_EQ(variants.size(), 4u) << run->dump();
  const std::vector<std::string> names = {"sync", "backup_workers=1", "async", "sync/no_straggler"};
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const nlohmann::json& v = variants[i];
    EXPECT_EQ(v["variant"], names[i]);
    EXPECT_EQ(v["mode"], "ps");
    EXPECT_EQ(v["completed"], true) << v["failure"];
    EXPECT_EQ(v["steps"], 20);
    EXPECT_FALSE(v["accuracy_over_time"].empty());
    if (names[i] == "backup_workers=1") {
      EXPECT_EQ(v["phase_seconds"]["update"].get<double>(), 0.0);  // the shards run the optimiser
    } else if (names[i] == "async") {
      EXPECT_EQ(v["phase_seconds"]["update"].get<double>(), 0.0);
      // Every point is due and taken (worker-0's pulled parameters: a read of the shards' ranges,
      // each at its own number of updates, once lost most of them).
      std::vector<int64_t> steps;
      for (const nlohmann::json& p : v["accuracy_over_time"]) steps.push_back(p["step"]);
      EXPECT_EQ(steps, (std::vector<int64_t>{0, 10, 20}));
    } else {
      EXPECT_GT(v["phase_seconds"]["update"].get<double>(), 0.0);
    }
  }
  // `modes.ps` is the first variant's run, the one the parity compares with the ring.
  EXPECT_EQ((*run)["modes"]["ps"]["samples_per_second"], variants[0]["samples_per_second"]);
  EXPECT_EQ((*run)["modes"]["ring"]["completed"], true);
  EXPECT_TRUE((*run)["best_ps_variant"].contains("line"));
  EXPECT_TRUE((*run)["best_ps_variant"].contains("best_over_sync_without_straggler"));
  const std::string log = ReadFileToString(dir->File("compare.log")).value_or("");
  for (const char* printed : {"20,32,10 ps backup_workers=1: started", "20,32,10 ps async: started",
                              "The ring and every PS variant"}) {
    EXPECT_NE(log.find(printed), std::string::npos) << printed << "\n" << log;
  }
  const std::string html = ReadFileToString(dir->File("out.html")).value_or("");
  EXPECT_NE(html.find("evaluation ps async"), std::string::npos);  // its marks in the chart
}

// --compression_variants=randomk,powersgd,topk: ring runs with random-k and PowerSGD and a ps run
// with top-k beside the plain ring and ps, and accuracy per byte: every evaluation says what the
// evaluating worker had sent by then (the measured link bytes, rising from 0 at the initial
// parameters), and the bytes to target are those of the evaluation that first reached it. Each
// compressed run sends less than its plain mode, and every link of it exactly the codec's bytes.
TEST(CompareCommandTest, CompressedRowsBesideThePlainModesWithAccuracyAgainstBytes) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> small = SmallFashionMnistJob(*dir);
  ASSERT_FALSE(small.empty());
  const absl::StatusOr<nlohmann::json> run =
      RunCompareToJson(*dir, Plus(small, {"--steps=40", "--workers=2", "--target_accuracy=0.3",
                                          "--compression_variants=randomk:0.25,powersgd:1,topk:0.1",
                                          "--report=" + dir->File("out.html")}));
  ASSERT_TRUE(run.ok()) << run.status();
  const nlohmann::json& variants = (*run)["modes"]["compression_variants"];
  ASSERT_EQ(variants.size(), 3u) << "random-k and PowerSGD fit the ring only, top-k ps: "
                                 << run->dump();
  const nlohmann::json& compressed = variants[0];
  const nlohmann::json& powersgd = variants[1];
  const nlohmann::json& topk = variants[2];
  EXPECT_EQ(compressed["mode"], "ring");
  EXPECT_EQ(compressed["compression"], "randomk:0.25");
  EXPECT_EQ(compressed["completed"], true) << compressed["failure"];
  EXPECT_EQ(powersgd["mode"], "ring");
  EXPECT_EQ(powersgd["compression"], "powersgd:1");
  EXPECT_EQ(powersgd["completed"], true) << powersgd["failure"];
  EXPECT_EQ(topk["mode"], "ps");
  EXPECT_EQ(topk["compression"], "topk:0.1");
  EXPECT_EQ(topk["completed"], true) << topk["failure"];
  EXPECT_EQ((*run)["modes"]["ring"]["compression"], "none");
  for (const nlohmann::json* m :
       {&(*run)["modes"]["ring"], &(*run)["modes"]["ps"], &compressed, &powersgd, &topk}) {
    SCOPED_TRACE((*m)["mode"].get<std::string>() + " " + (*m)["compression"].get<std::string>());
    const nlohmann::json& points = (*m)["accuracy_over_time"];
    ASSERT_FALSE(points.empty());
    // The ring evaluates the initial parameters; a ps read of them may find the shards a few
    // steps on (accuracy_evaluator.h), and then its bytes are that step's.
    if (points[0]["step"] == 0) {
      EXPECT_EQ(points[0]["sent_bytes"], 0) << "nothing is sent before the first step";
    }
    if ((*m)["mode"] == "ring") {
      EXPECT_EQ(points[0]["step"], 0);
    }
    nlohmann::json first_at_target;
    for (size_t i = 0; i < points.size(); ++i) {
      ASSERT_TRUE(points[i]["sent_bytes"].is_number_integer()) << points[i].dump();
      if (i > 0 || points[i]["step"] > 0) {
        EXPECT_GT(points[i]["sent_bytes"], i > 0 ? points[i - 1]["sent_bytes"] : nlohmann::json(0));
      }
      if (first_at_target.is_null() && points[i]["test_accuracy"].get<double>() >= 0.3) {
        first_at_target = points[i];
      }
    }
    EXPECT_GT(points.back()["sent_bytes"].get<double>(), 0);
    if (first_at_target.is_null()) {
      EXPECT_TRUE((*m)["bytes_to_target"].is_null());
    } else {
      EXPECT_EQ((*m)["bytes_to_target"], first_at_target["sent_bytes"]);
      EXPECT_EQ((*m)["steps_to_target"], first_at_target["step"]);
    }
  }
  // Random-k sends a quarter of the values (and no more than the plain ring in any step), PowerSGD
  // rank 1 two thin factors of each matrix; top-k a tenth, with its indices, both ways.
  EXPECT_LT(compressed["accuracy_over_time"].back()["sent_bytes"].get<double>(),
            (*run)["modes"]["ring"]["accuracy_over_time"].back()["sent_bytes"].get<double>() / 2);
  EXPECT_LT(powersgd["accuracy_over_time"].back()["sent_bytes"].get<double>(),
            (*run)["modes"]["ring"]["accuracy_over_time"].back()["sent_bytes"].get<double>() / 4);
  EXPECT_LT(topk["accuracy_over_time"].back()["sent_bytes"].get<double>(),
            (*run)["modes"]["ps"]["accuracy_over_time"].back()["sent_bytes"].get<double>() / 2);
  // Exact accounting: every link of the compressed runs carried the cost model's bytes.
  for (const nlohmann::json* m : {&compressed, &powersgd, &topk}) {
    ASSERT_FALSE((*m)["links"].empty()) << m->dump();
    for (const nlohmann::json& link : (*m)["links"]) {
      EXPECT_EQ(link["bytes_per_step"], link["expected_bytes_per_step"]) << link.dump();
    }
  }
  const std::string log = ReadFileToString(dir->File("compare.log")).value_or("");
  for (const char* printed :
       {"20,32,10 ring randomk:0.25: started",
        "Every run, plain and compressed (--compression_variants)", "bytes to 30%"}) {
    EXPECT_NE(log.find(printed), std::string::npos) << printed << "\n" << log;
  }
  const std::string html = ReadFileToString(dir->File("out.html")).value_or("");
  EXPECT_NE(html.find("id=\"accuracy-bytes-job0\""), std::string::npos);
  EXPECT_NE(html.find("evaluation ring randomk:0.25"), std::string::npos);
}

// Without --model compare runs its two default jobs (the heavy model on Fashion-MNIST, then
// Iris); --steps and --batch_size given on the command line apply to both, where the heavy job's
// own defaults (200 steps of 64 rows) once replaced them silently. --data=fashion-mnist:DIR alone
// picks the heavy job only.
TEST(CompareCommandTest, TheDefaultJobsTakeTheStepsAndBatchGiven) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> given = {"--steps=3", "--eval_every=3", "--batch_size=8",
                                          "--workers=2", "--ps_shards=1"};
  const absl::StatusOr<nlohmann::json> run = RunCompareToJson(*dir, given);
  ASSERT_TRUE(run.ok()) << run.status();
  const nlohmann::json& json = *run;
  ASSERT_EQ(json["jobs"].size(), 2u) << json.dump();
  EXPECT_EQ(json["jobs"][0]["config"]["model"], "784,1024,1024,10");
  EXPECT_EQ(json["jobs"][0]["config"]["data"], "fashion-mnist");
  EXPECT_EQ(json["jobs"][1]["config"]["data"], "iris");
  for (const nlohmann::json& job : json["jobs"]) {
    SCOPED_TRACE(job["config"]["model"].get<std::string>());
    EXPECT_EQ(job["config"]["steps"], 3);
    EXPECT_EQ(job["config"]["batch_size"], 8);
    for (const char* mode : {"ring", "ps"}) EXPECT_EQ(job["modes"][mode]["steps"], 3) << mode;
  }

  const std::string data = dir->File("data");
  ASSERT_EQ(mkdir(data.c_str(), 0755), 0);
  ASSERT_TRUE(testing::WriteTinyFashionMnist(data, 64, 20, 28, 28));  // the heavy model's shape
  std::vector<std::string> with_data = given;
  with_data.push_back("--data=fashion-mnist:" + data);
  const absl::StatusOr<nlohmann::json> heavy = RunCompareToJson(*dir, with_data);
  ASSERT_TRUE(heavy.ok()) << heavy.status();
  ASSERT_EQ((*heavy)["jobs"].size(), 1u) << heavy->dump();
  EXPECT_EQ((*heavy)["jobs"][0]["config"]["model"], "784,1024,1024,10");
  EXPECT_EQ((*heavy)["jobs"][0]["config"]["steps"], 3);
}

// Bad accuracy flags, a data directory without the four files and a model that does not fit the
// images fail at once, naming what is wrong, before any cluster starts.
// --colocate on loopback: a third run, ps with one shard per worker, whose every link carries the
// cost model's bytes (worker -> shard s: |range s|, and back).
TEST(CompareCommandTest, ColocateAddsAPsRunWithAShardPerWorker) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<nlohmann::json> run =
      RunCompareToJson(*dir, {"--colocate", "--model=4,16,3", "--data=iris", "--workers=3",
                              "--ps_shards=1", "--steps=20", "--insecure"});
  ASSERT_TRUE(run.ok()) << run.status();
  const nlohmann::json& colocated = (*run)["modes"]["ps_colocated"];
  ASSERT_TRUE(colocated["completed"].get<bool>()) << colocated["failure"];
  EXPECT_EQ(colocated["colocated"], true);
  EXPECT_EQ(colocated["ps_shards"], 3);
  EXPECT_EQ(colocated["steps"], 20);
  EXPECT_EQ(colocated["links"].size(), 18u);  // 3 workers × 3 shards, each way
  for (const nlohmann::json& link : colocated["links"]) {
    EXPECT_EQ(link["bytes_per_step"], link["expected_bytes_per_step"])
        << link["src"] << " -> " << link["dst"];
  }
  EXPECT_EQ((*run)["modes"]["ps"]["links"].size(), 6u);  // the separate run kept its one shard
  EXPECT_EQ((*run)["config"]["ps_shards"], 1);
}

TEST(CompareCommandTest, BadAccuracyFlagsAndMissingDataFailBeforeAnyClusterStarts) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  const std::string data = dir->File("data");
  ASSERT_EQ(mkdir(data.c_str(), 0755), 0);
  ASSERT_TRUE(testing::WriteTinyFashionMnist(data, 20, 10));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--eval_every=0", "--eval_every=0"},
      {"--eval_every=-5", "--eval_every=-5"},
      {"--target_accuracy=0", "--target_accuracy=0"},
      {"--target_accuracy=1.5", "--target_accuracy=1.5"},
      {"--data=fashion-mnist:" + dir->path(), "train-images-idx3-ubyte.gz"},
      {"--data=fashion-mnist:", "fashion-mnist:DIR"},
      {"--data=fashion-mnist:" + data, "use a model like 20,16,10"},  // the default 784,...,10
      {"--ps_variants=fast", "--ps_variants: \"fast\" is not a variant"},
      {"--ps_variants=sync,async,sync", "sync is listed twice"},
      {"--compression_variants=topk:2", "topk:F"},
      {"--compression_variants=none", "list codecs only"},
      {"--compression_variants=randomk:0.1,randomk:0.1", "randomk:0.1 is listed twice"},
      {"--ps_window_bytes=8", "--ps_window_bytes=8: between 16 bytes and"},
      {"--ps_window_bytes=4194304", "--ps_window_bytes=4194304: between 16 bytes and"},
      {"--stall_timeout=500ms", "--stall_timeout=500ms: at least 1s"},
  };
  for (const auto& [flag, named] : cases) {
    SCOPED_TRACE(flag);
    launch::SpawnOptions spawn;
    spawn.argv = {testing::BinDir() + "/ringside", "compare", flag};
    spawn.log_path = dir->File("bad.log");
    auto process = launch::Subprocess::Spawn(spawn);
    ASSERT_TRUE(process.ok()) << process.status();
    auto exit = process->Wait(absl::Seconds(60));
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(exit->exit_code, 1);
    const std::string log = ReadFileToString(spawn.log_path).value_or("");
    EXPECT_NE(log.find(named), std::string::npos) << log;
    EXPECT_EQ(log.find("started"), std::string::npos) << "a cluster was started: " << log;
  }
}

// A running `ringside compare` and the children it reports starting.
struct RunningCompare {
  launch::Subprocess process;
  std::string log;
  std::map<std::string, pid_t> children;  // of the first cluster it printed
};

RunningCompare StartCompare(const launch::TempDir& dir, const std::vector<std::string>& flags) {
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "compare"};
  spawn.argv.insert(spawn.argv.end(), flags.begin(), flags.end());
  spawn.log_path = dir.File("compare.log");
  auto process = launch::Subprocess::Spawn(spawn);
  EXPECT_TRUE(process.ok()) << process.status();
  RunningCompare running{*std::move(process), spawn.log_path, {}};
  const std::regex child("(controller|ps-[0-9]+|worker-[0-9]+) \\(pid ([0-9]+)\\)");
  for (int i = 0; i < 3000 && running.children.empty(); ++i) {
    const std::string text = ReadFileToString(running.log).value_or("");
    const std::string first_line = text.substr(0, text.find('\n'));
    if (text.find('\n') != std::string::npos) {
      for (std::sregex_iterator it(first_line.begin(), first_line.end(), child), end; it != end;
           ++it) {
        running.children[(*it)[1]] = static_cast<pid_t>(std::stol((*it)[2]));
      }
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(running.children.empty()) << launch::TailOfFile(running.log, 20);
  return running;
}

void ExpectAllGone(const std::map<std::string, pid_t>& children) {
  for (const auto& [name, pid] : children) {
    EXPECT_NE(kill(pid, 0), 0) << name << " (pid " << pid << ") outlived ringside compare";
  }
}

// Issue 23: a process that ends is printed with the last lines of its log and kept in the JSON
// (`process_failures`), and the cluster's directory, with that log, is kept and named. worker-1
// wrote its registration line before compare printed its pid, so that line is in the tail.
void ExpectTheLostWorkersLogQuotedAndKept(const nlohmann::json& mode, const std::string& output) {
  const nlohmann::json& failures = mode["process_failures"];
  ASSERT_EQ(failures.size(), 1u) << mode.dump(2);
  const nlohmann::json& failure = failures[0];
  EXPECT_EQ(failure["name"], "worker-1");
  EXPECT_EQ(failure["exit"], "killed by signal 9 (SIGKILL)");
  const std::string log = failure["log"].get<std::string>();
  EXPECT_TRUE(std::filesystem::exists(log)) << log << " was not kept";
  bool registered = false;
  for (const nlohmann::json& line : failure["last_lines"]) {
    const std::string text = line.get<std::string>();
    EXPECT_EQ(text.front(), '"') << text;
    registered |= text.find("registered with the controller") != std::string::npos;
    EXPECT_NE(output.find("    " + text + "\n"), std::string::npos)
        << "compare did not print " << text << ":\n"
        << output;
  }
  EXPECT_TRUE(registered) << failure.dump(2);
  EXPECT_NE(output.find("last lines of its log (" + log + "):"), std::string::npos) << output;
  const std::string kept = std::filesystem::path(log).parent_path().string();
  EXPECT_NE(output.find("the cluster's logs are kept in " + kept), std::string::npos) << output;
  if (kept.find("ringside-compare-") != std::string::npos) {
    std::filesystem::remove_all(kept);  // kept for a person; this test has read it
  }
}

// Removes the cluster directories `ringside compare` or `up` kept after a process ended (and
// named in its output).
void RemoveKeptDirectories(const std::string& output) {
  const std::string prefix = "the cluster's logs are kept in ";
  for (size_t at = output.find(prefix); at != std::string::npos; at = output.find(prefix, at)) {
    at += prefix.size();
    const std::string kept = output.substr(at, output.find('\n', at) - at);
    if (kept.find("ringside-compare-") != std::string::npos ||
        kept.find("ringside-up-") != std::string::npos) {
      std::filesystem::remove_all(kept);
    }
  }
}

TEST(CompareCommandTest, ALostWorkerIsReportedAndTheRunGoesOn) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  RunningCompare compare =
      StartCompare(*dir, {"--model=64,256,10", "--data=synthetic:2048", "--steps=2000",
                          "--workers=3", "--ps_shards=1", "--json=" + dir->File("out.json")});
  ASSERT_TRUE(compare.children.count("worker-1"));
  // The children named first are the first run's, and runs go ring first, then ps: the lost
  // worker is the ring's.
  // The kill lands wherever the cluster is (forming, regrouping or training): the run must go on
  // whichever moment it is. The fault tests (tests/worker/elastic_fault_test.cc) hit each
  // protocol point on purpose.
  ASSERT_EQ(kill(compare.children["worker-1"], SIGKILL), 0);
  auto exit = compare.process.Wait(absl::Seconds(240));
  ASSERT_TRUE(exit.ok() && exit->ok()) << launch::TailOfFile(compare.log, 20);
  const nlohmann::json json =
      nlohmann::json::parse(ReadFileToString(dir->File("out.json")).value());
  EXPECT_EQ(json["modes"]["ring"]["final_world"], 2);
  ASSERT_FALSE(json["modes"]["ring"]["events"].empty());
  EXPECT_NE(json["modes"]["ring"]["events"][0].get<std::string>().find("worker-1"),
            std::string::npos);
  EXPECT_NE(ReadFileToString(compare.log).value().find("2 of 3 (1 lost)"), std::string::npos)
      << "the table says a worker was lost";
  ExpectAllGone(compare.children);
  ExpectTheLostWorkersLogQuotedAndKept(json["modes"]["ring"],
                                       ReadFileToString(compare.log).value_or(""));
}

// A cluster that hangs (every worker stopped by SIGSTOP: alive, silent) fails once
// --stall_timeout passes with no step and no byte seen, naming the stall; compare stops every
// child, keeps the logs and exits instead of waiting for ever.
TEST(CompareCommandTest, AStalledClusterFailsAfterTheStallTimeoutNamingIt) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  RunningCompare compare =
      StartCompare(*dir, {"--model=64,256,10", "--data=synthetic:2048", "--steps=100000",
                          "--workers=2", "--ps_shards=1", "--stall_timeout=2s"});
  ASSERT_TRUE(compare.children.count("worker-1"));
  for (const auto& [name, pid] : compare.children) {
    if (absl::StartsWith(name, "worker-")) {
      ASSERT_EQ(kill(pid, SIGSTOP), 0) << name;
    }
  }
  auto exit = compare.process.Wait(absl::Seconds(120));
  ASSERT_TRUE(exit.ok()) << "compare did not stop a stalled cluster";
  EXPECT_FALSE(exit->ok());
  const std::string output = ReadFileToString(compare.log).value_or("");
  EXPECT_NE(output.find("stalled: no step and no byte sent for 2s"), std::string::npos) << output;
  EXPECT_NE(output.find("(--stall_timeout)"), std::string::npos) << output;
  EXPECT_NE(output.find("the cluster's logs are kept in "), std::string::npos) << output;
  ExpectAllGone(compare.children);
  RemoveKeptDirectories(output);
}

TEST(CompareCommandTest, ALostControllerStopsEveryChildAndFailsNamingIt) {
  auto dir = launch::TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  RunningCompare compare = StartCompare(*dir, {"--model=64,256,10", "--data=synthetic:2048",
                                               "--steps=100000", "--workers=2", "--ps_shards=1"});
  ASSERT_TRUE(compare.children.count("controller"));
  ASSERT_EQ(kill(compare.children["controller"], SIGKILL), 0);
  auto exit = compare.process.Wait(absl::Seconds(60));
  ASSERT_TRUE(exit.ok()) << "compare did not stop after its controller died";
  EXPECT_FALSE(exit->ok());
  const std::string output = ReadFileToString(compare.log).value_or("");
  EXPECT_NE(output.find("controller (pid"), std::string::npos)
      << launch::TailOfFile(compare.log, 20);
  // Its last words, and the directory that keeps its log.
  EXPECT_NE(output.find("last lines of its log ("), std::string::npos) << output;
  EXPECT_NE(output.find("the cluster's logs are kept in "), std::string::npos) << output;
  ExpectAllGone(compare.children);
  RemoveKeptDirectories(output);
}

// `ringside up` keeps the cluster running when a worker dies, says so, and prints the command
// that adds a worker; the added worker joins and trains.
TEST(UpCommandTest, ALostWorkerIsReportedAndAnAddedOneJoinsAndTrains) {
  auto dir = launch::TempDir::Create("ringside-up-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside",
                "up",
                "--workers=3",
                "--ps_shards=1",
                "--model=16,64,4",
                "--data=synthetic:512",
                "--heartbeat_timeout=1s",
                "--ready_file=" + dir->File("up.json")};
  spawn.log_path = dir->File("up.log");
  auto up = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(up.ok()) << up.status();
  auto wait_for = [&](const std::function<bool()>& event, const std::string& what) {
    const absl::Status seen = testing::PollUntil(event, absl::Seconds(120), [&] {
      return up->Poll().has_value() ? std::optional<std::string>("ringside up exited")
                                    : std::nullopt;
    });
    EXPECT_TRUE(seen.ok()) << "no " << what << ": " << seen.message() << "\n"
                           << launch::TailOfFile(spawn.log_path, 20);
    return seen.ok();
  };
  nlohmann::json ready;
  ASSERT_TRUE(wait_for(
      [&] {
        ready = nlohmann::json::parse(ReadFileToString(dir->File("up.json")).value_or(""), nullptr,
                                      false);
        return ready.is_object();
      },
      "ready file"));
  std::map<std::string, pid_t> pids;
  int controller_metrics = 0;
  for (const nlohmann::json& process : ready["processes"]) {
    pids[process["name"].get<std::string>()] = process["pid"].get<pid_t>();
    if (process["name"] == "controller") {
      const std::string url = process["metrics_url"].get<std::string>();
      controller_metrics = std::stoi(url.substr(url.rfind(':') + 1));
    }
  }
  ASSERT_GT(controller_metrics, 0);
  // Without --steps it trains until stopped, and says so first.
  EXPECT_EQ(ReadFileToString(spawn.log_path)
                .value_or("")
                .rfind("ringside up: training until "
                       "stopped (Ctrl-C), ring mode\n",
                       0),
            0u)
      << launch::TailOfFile(spawn.log_path, 5);
  // Every process's gRPC address, as the ready file gives it, answers a health check with the
  // ready file's client flags.
  const absl::StatusOr<TransportSecurity> security = ClientSecurity(ready);
  ASSERT_TRUE(security.ok()) << security.status();
  for (const nlohmann::json& process : ready["processes"]) {
    const std::string address = process["grpc_address"].get<std::string>();
    EXPECT_TRUE(
        wait_for([&] { return cli::CheckHealth(address, absl::Seconds(2), *security).ok(); },
                 "SERVING " + process["name"].get<std::string>() + " at " + address));
  }
  EXPECT_EQ(ready["processes"][0]["grpc_address"], ready["controller"]);
  auto controller = [&](const std::string& name) {
    return launch::FindSample(testing::ScrapeMetrics(controller_metrics), name, {}).value_or(-1);
  };
  ASSERT_TRUE(wait_for([&] { return controller("ringside_world_size") == 3; }, "world of 3"));
  ASSERT_EQ(kill(pids.at("worker-1"), SIGKILL), 0);
  ASSERT_TRUE(wait_for(
      [&] {
        return ReadFileToString(spawn.log_path).value_or("").find("lost worker-1") !=
               std::string::npos;
      },
      "report of the lost worker"));
  // With its log's last lines, quoted: its first line is written before its ready file.
  ASSERT_TRUE(wait_for(
      [&] {
        return ReadFileToString(spawn.log_path).value_or("").find("    \"worker: RingPeer on ") !=
               std::string::npos;
      },
      "the lost worker's last log lines"));
  ASSERT_TRUE(wait_for([&] { return controller("ringside_world_size") == 2; }, "world of 2"));

  // The command `ringside up` printed, run as a person would.
  const std::string log = ReadFileToString(spawn.log_path).value_or("");
  launch::SpawnOptions added;
  added.argv = PrintedCommand(log, "add a worker with: ");
  ASSERT_FALSE(added.argv.empty()) << log;
  const std::string command = absl::StrJoin(added.argv, " ");
  added.log_path = dir->File("added.log");
  auto worker = launch::Subprocess::Spawn(added);
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::string trace_file;
  for (const std::string& arg : added.argv) {
    if (arg.rfind("--trace_file=", 0) == 0) trace_file = arg.substr(13);
  }
  ASSERT_FALSE(trace_file.empty()) << command;
  ASSERT_TRUE(wait_for([&] { return controller("ringside_world_size") == 3; }, "world of 3 again"));
  ASSERT_TRUE(wait_for([&] { return ReadStepTrace(trace_file).lines.size() >= 3; },
                       "steps trained by the added worker"));
  EXPECT_TRUE(up->running()) << "ringside up must go on without the lost worker";

  // A script that knows only the ready file switches modes: its controller and client_flags
  // are every flag `ringside ctl` needs (mutual TLS with the operator's certificate, and the
  // operator token). The command `ringside up` printed says the same.
  launch::SpawnOptions ctl;
  ctl.argv = {testing::BinDir() + "/ringside", "ctl", "mode", "ps",
              "--controller=" + ready["controller"].get<std::string>()};
  for (const nlohmann::json& flag : ready["client_flags"]) ctl.argv.push_back(flag);
  std::vector<std::string> printed = PrintedCommand(log, "switch modes with: ");
  std::vector<std::string> from_ready(ctl.argv.begin() + 1, ctl.argv.end());
  ASSERT_GT(printed.size(), 1u) << log;
  printed.erase(printed.begin());  // the binary's path as printed
  std::sort(printed.begin(), printed.end());
  std::sort(from_ready.begin(), from_ready.end());
  EXPECT_EQ(absl::StrJoin(from_ready, " "), absl::StrJoin(printed, " "));
  EXPECT_NE(absl::StrJoin(ctl.argv, " ").find("--tls_cert="), std::string::npos)
      << absl::StrJoin(ctl.argv, " ");
  // Runs ctl as built above; expects exit 0 and `said` in its output.
  auto run_ctl = [&](const std::string& log_name, const std::string& said) {
    ctl.log_path = dir->File(log_name);
    auto process = launch::Subprocess::Spawn(ctl);
    ASSERT_TRUE(process.ok()) << process.status();
    auto ctl_exit = process->Wait(absl::Seconds(30));
    ASSERT_TRUE(ctl_exit.ok());
    EXPECT_TRUE(ctl_exit->ok()) << launch::TailOfFile(ctl.log_path, 5);
    EXPECT_NE(ReadFileToString(ctl.log_path).value_or("").find(said), std::string::npos)
        << launch::TailOfFile(ctl.log_path, 5);
  };
  run_ctl("ctl.log", "mode ps from generation");
  // Asked again, the switch is a no-op that says so.
  run_ctl("ctl-again.log", "already in ps mode (generation ");
  worker->Kill();
  kill(up->pid(), SIGTERM);
  auto exit = up->Wait(absl::Seconds(60));
  ASSERT_TRUE(exit.ok());
  ExpectAllGone({{"controller", pids.at("controller")}, {"ps-0", pids.at("ps-0")}});
  const std::string output = ReadFileToString(spawn.log_path).value_or("");
  EXPECT_NE(output.find("the cluster's logs are kept in "), std::string::npos) << output;
  RemoveKeptDirectories(output);
}

// `ringside up` restarts a controller that dies, at its address, and says so; its ready file
// names the new pid.
TEST(UpCommandTest, AKilledControllerIsRestartedAtItsAddressAndReported) {
  auto dir = launch::TempDir::Create("ringside-up-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside",
                "up",
                "--workers=2",
                "--ps_shards=1",
                "--model=4,16,3",
                "--steps=100000000",
                "--heartbeat_timeout=1s",
                "--checkpoint_dir=" + dir->File("checkpoints"),
                "--checkpoint_every=50",
                "--ready_file=" + dir->File("up.json")};
  spawn.log_path = dir->File("up.log");
  auto up = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(up.ok()) << up.status();
  auto wait_for = [&](const std::function<bool()>& event, const std::string& what) {
    const absl::Status seen = testing::PollUntil(event, absl::Seconds(120), [&] {
      return up->Poll().has_value() ? std::optional<std::string>("ringside up exited")
                                    : std::nullopt;
    });
    EXPECT_TRUE(seen.ok()) << "no " << what << ": " << seen.message() << "\n"
                           << launch::TailOfFile(spawn.log_path, 20);
    return seen.ok();
  };
  auto controller_pid = [&]() -> pid_t {
    const nlohmann::json ready =
        nlohmann::json::parse(ReadFileToString(dir->File("up.json")).value_or(""), nullptr, false);
    if (!ready.is_object()) return 0;
    for (const nlohmann::json& process : ready["processes"]) {
      if (process["name"] == "controller") return process["pid"].get<pid_t>();
    }
    return 0;
  };
  ASSERT_TRUE(wait_for([&] { return controller_pid() > 0; }, "ready file"));
  const pid_t killed = controller_pid();
  const nlohmann::json ready =
      nlohmann::json::parse(ReadFileToString(dir->File("up.json")).value());
  const std::string address = ready["controller"].get<std::string>();
  const absl::StatusOr<TransportSecurity> security = ClientSecurity(ready);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE(security->is_tls()) << "ringside up runs mutual TLS unless --insecure";
  EXPECT_TRUE(std::filesystem::is_directory(dir->File("checkpoints")));
  ASSERT_EQ(kill(killed, SIGKILL), 0);

  const std::string report = absl::StrCat("controller (pid ", killed, ") killed by signal 9");
  ASSERT_TRUE(wait_for(
      [&] {
        const std::string log = ReadFileToString(spawn.log_path).value_or("");
        const size_t at = log.find(report);
        return at != std::string::npos && log.find("restarted it as pid", at) < log.find('\n', at);
      },
      "report of the restarted controller"));
  ASSERT_TRUE(wait_for([&] { return controller_pid() > 0 && controller_pid() != killed; },
                       "ready file naming the new controller"));
  ASSERT_TRUE(wait_for([&] { return cli::CheckHealth(address, absl::Seconds(2), *security).ok(); },
                       "SERVING controller at " + address));
  EXPECT_TRUE(up->running()) << "ringside up must go on after restarting its controller";
  const pid_t replacement = controller_pid();
  kill(up->pid(), SIGTERM);
  auto exit = up->Wait(absl::Seconds(60));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->ok()) << exit->ToString() << "\n" << launch::TailOfFile(spawn.log_path, 20);
  ExpectAllGone({{"controller", replacement}});
  const std::string output = ReadFileToString(spawn.log_path).value_or("");
  EXPECT_NE(output.find("last lines of its log ("), std::string::npos) << output;
  RemoveKeptDirectories(output);
}

// The checkpoint flags are listed by --help, and a bad combination fails at once naming them.
TEST(UpCommandTest, CheckpointFlagsAreListedAndChecked) {
  auto dir = launch::TempDir::Create("ringside-up-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "--help"};
  spawn.log_path = dir->File("help.log");
  auto help = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(help.ok()) << help.status();
  ASSERT_TRUE(help->Wait(absl::Seconds(30)).ok());
  const std::string usage = ReadFileToString(spawn.log_path).value_or("");
  EXPECT_NE(usage.find("--checkpoint_dir"), std::string::npos) << usage;
  EXPECT_NE(usage.find("--checkpoint_every"), std::string::npos) << usage;

  for (const char* command : {"up", "compare"}) {
    SCOPED_TRACE(command);
    spawn.argv = {testing::BinDir() + "/ringside", command, "--checkpoint_every=5"};
    spawn.log_path = dir->File(absl::StrCat(command, ".log"));
    auto run = launch::Subprocess::Spawn(spawn);
    ASSERT_TRUE(run.ok()) << run.status();
    auto exit = run->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok());
    EXPECT_EQ(exit->exit_code, 1);
    EXPECT_NE(ReadFileToString(spawn.log_path)
                  .value_or("")
                  .find("--checkpoint_every needs a --checkpoint_dir"),
              std::string::npos)
        << launch::TailOfFile(spawn.log_path, 5);
  }
}

}  // namespace
}  // namespace ringside
