// Multi-process tests of `ringside-bench ring`: the real binary, real rank processes.
// No timing assertions: only that cells ran, values checked and figures are positive.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "common/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ringside {
namespace {

using ::testing::HasSubstr;

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BenchRun {
  ExitStatus exit;
  std::string output;  // stdout and stderr
};

class RingBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = EnvOrEmpty("RINGSIDE_BIN_DIR");
    source_dir_ = EnvOrEmpty("RINGSIDE_SOURCE_DIR");
    ASSERT_FALSE(bin_dir_.empty()) << "RINGSIDE_BIN_DIR is not set (run through ctest)";
    absl::StatusOr<TempDir> dir = TempDir::Create("ring-bench-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
  }

  BenchRun Run(std::vector<std::string> args, std::vector<std::string> env = {}) {
    SpawnOptions options;
    options.argv = {bin_dir_ + "/ringside-bench"};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.log_path = dir_->File(absl::StrCat("bench-", runs_++, ".log"));
    options.extra_env = std::move(env);
    BenchRun run;
    absl::StatusOr<Subprocess> process = Subprocess::Spawn(options);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return run;
    absl::StatusOr<ExitStatus> exit = process->Wait(absl::Seconds(300));
    EXPECT_TRUE(exit.ok()) << exit.status();
    run.exit = exit.value_or(ExitStatus{});
    run.output = ReadFile(options.log_path);
    return run;
  }

  nlohmann::json Records(const std::string& path) {
    const nlohmann::json json = nlohmann::json::parse(ReadFile(path), nullptr, false);
    EXPECT_TRUE(json.is_object()) << ReadFile(path);
    return json.is_object() ? json["records"] : nlohmann::json::array();
  }

  std::string bin_dir_;
  std::string source_dir_;
  std::unique_ptr<TempDir> dir_;
  int runs_ = 0;
};

#ifdef RINGSIDE_HAVE_GLOO
TEST_F(RingBenchTest, GlooRowsRunAndCheck) {
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ring", "--implementations=gloo_allreduce_ring,gloo_ring_chunked",
                            "--worlds=2", "--sizes=64KiB", "--iters=3", "--json", json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u) << records.dump();
  for (const nlohmann::json& record : records) {
    EXPECT_EQ(record["workers"], 2);
    EXPECT_EQ(record["bytes"], 64 * 1024);
    EXPECT_EQ(record["check_ok"], true) << record.dump();
    ASSERT_TRUE(record["busbw"].is_number()) << record.dump();
    EXPECT_GT(record["busbw"].get<double>(), 0);
    EXPECT_GT(record["seconds_per_op"].get<double>(), 0);
  }
  EXPECT_EQ(records[0]["implementation"], "gloo_allreduce_ring");
  EXPECT_EQ(records[1]["implementation"], "gloo_ring_chunked");
  EXPECT_THAT(run.output, HasSubstr("busbw GB/s"));
}

TEST_F(RingBenchTest, MissingWorkerFailsOnlyTheRingsideRows) {
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ring", "--implementations=ringside,gloo_allreduce_ring", "--workers=2",
                            "--elements=1024", "--iters=2",
                            "--worker_binary=/nonexistent/ringside-worker", "--json=" + json});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("no executable ringside-worker at /nonexistent"));
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["implementation"], "ringside");
  EXPECT_EQ(records[0]["check_ok"], false);
  EXPECT_TRUE(records[0]["busbw"].is_null());
  EXPECT_EQ(records[1]["check_ok"], true);
}
#endif  // RINGSIDE_HAVE_GLOO

TEST_F(RingBenchTest, RealWorkersRunAndCheckTheirValues) {
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ring", "--implementations=ringside", "--worlds=2,3", "--sizes=256KiB",
                            "--iters=2", "--warmup=1", "--json=" + json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u);
  for (const nlohmann::json& record : records) {
    EXPECT_EQ(record["check_ok"], true) << record.dump();
    EXPECT_GT(record["busbw"].get<double>(), 0) << record.dump();
  }
}

TEST_F(RingBenchTest, DrivesWorkersWithTheWorkerCli) {
  const std::string fake = source_dir_ + "/tests/bench/fake_ringside_worker.sh";
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ring", "--implementations=ringside", "--worlds=2,3", "--sizes=4KiB",
                            "--iters=4", "--worker_binary=" + fake, "--json=" + json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["workers"], 3);
  EXPECT_EQ(records[1]["elements"], 1024);
  EXPECT_EQ(records[1]["check_ok"], true);
  EXPECT_DOUBLE_EQ(records[1]["seconds_per_op"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(records[1]["busbw"].get<double>(), 4096 / 0.001 * 4 / 3 / 1e9);
}

TEST_F(RingBenchTest, ReportsWorkerFailuresAndWrongValues) {
  const std::string fake = source_dir_ + "/tests/bench/fake_ringside_worker.sh";
  const std::vector<std::string> args = {"ring",        "--implementations=ringside",
                                         "--workers=2", "--sizes=4KiB",
                                         "--iters=1",   "--worker_binary=" + fake};
  const BenchRun failed = Run(args, {"FAKE_WORKER_EXIT=7"});
  EXPECT_EQ(failed.exit.exit_code, 1);
  EXPECT_THAT(failed.output, HasSubstr("exit code 7"));
  EXPECT_THAT(failed.output, HasSubstr("failing on purpose"));
  const BenchRun wrong = Run(args, {"FAKE_WORKER_CHECK_OK=false"});
  EXPECT_EQ(wrong.exit.exit_code, 1);
  EXPECT_THAT(wrong.output, HasSubstr("WRONG"));
}

TEST_F(RingBenchTest, BadFlagsFailWithOneLineNamingTheFlag) {
  for (const auto& [flag, name] : std::vector<std::pair<std::string, std::string>>{
           {"--sizes=3", "sizes"},
           {"--implementations=nccl", "implementations"},
           {"--worlds=2,x", "worlds"},
           {"--no_such_flag=1", "no_such_flag"},
           {"--workers=1", "--workers"}}) {
    const BenchRun run = Run({"ring", flag});
    EXPECT_NE(run.exit.exit_code, 0) << flag;
    EXPECT_THAT(run.output, HasSubstr(name)) << flag;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  }
  const BenchRun unknown = Run({"frobnicate"});
  EXPECT_EQ(unknown.exit.exit_code, 1);
  EXPECT_THAT(unknown.output, HasSubstr("unknown command 'frobnicate'"));
}

TEST_F(RingBenchTest, HelpListsTheFlags) {
  const BenchRun run = Run({"--help"});
  for (const char* flag : {"--workers", "--elements", "--iters", "--sizes", "--worlds", "--json",
                           "--implementations", "ring"}) {
    EXPECT_THAT(run.output, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace ringside
