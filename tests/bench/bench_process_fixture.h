// Test fixture for multi-process tests of the real `ringside-bench` binary: runs it with
// arguments (output captured in a per-test temporary directory) and reads its --json records.
#ifndef RINGSIDE_TESTS_BENCH_BENCH_PROCESS_FIXTURE_H_
#define RINGSIDE_TESTS_BENCH_BENCH_PROCESS_FIXTURE_H_

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

namespace ringside {

struct BenchRun {
  launch::ExitStatus exit;
  std::string output;  // stdout and stderr
};

class BenchProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin_dir = std::getenv("RINGSIDE_BIN_DIR");
    const char* source_dir = std::getenv("RINGSIDE_SOURCE_DIR");
    ASSERT_NE(bin_dir, nullptr) << "RINGSIDE_BIN_DIR is not set (run through ctest)";
    bin_dir_ = bin_dir;
    source_dir_ = source_dir != nullptr ? source_dir : "";
    absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("bench-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<launch::TempDir>(*std::move(dir));
  }

  // Runs `ringside-bench args...` to completion (5 minutes at most) with `env` added.
  BenchRun Run(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    launch::SpawnOptions options;
    options.argv = {bin_dir_ + "/ringside-bench"};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.log_path = dir_->File(absl::StrCat("bench-", runs_++, ".log"));
    options.extra_env = std::move(env);
    BenchRun run;
    absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return run;
    absl::StatusOr<launch::ExitStatus> exit = process->Wait(absl::Seconds(300));
    EXPECT_TRUE(exit.ok()) << exit.status();
    run.exit = exit.value_or(launch::ExitStatus{});
    run.output = ReadFileToString(options.log_path).value_or("");
    return run;
  }

  // The "records" array of a --json file (empty, and a test failure, if it is not JSON).
  nlohmann::json Records(const std::string& path) {
    const std::string text = ReadFileToString(path).value_or("");
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
    EXPECT_TRUE(json.is_object()) << text;
    return json.is_object() ? json["records"] : nlohmann::json::array();
  }

  std::string bin_dir_;
  std::string source_dir_;
  std::unique_ptr<launch::TempDir> dir_;
  int runs_ = 0;
};

}  // namespace ringside

#endif  // RINGSIDE_TESTS_BENCH_BENCH_PROCESS_FIXTURE_H_
