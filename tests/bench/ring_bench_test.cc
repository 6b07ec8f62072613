// Multi-process tests of `ringside-bench ring`: the real binary, real rank processes.
// No timing assertions: only that cells ran, values checked and figures are positive.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/bench/bench_process_fixture.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

using RingBenchTest = BenchProcessTest;

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
                            "--rank_binary=/nonexistent/ringside-bench", "--json=" + json});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("no executable rank binary at /nonexistent"));
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

TEST_F(RingBenchTest, DrivesRanksWithTheRankCli) {
  const std::string fake = source_dir_ + "/tests/bench/fake_ring_rank.sh";
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ring", "--implementations=ringside", "--worlds=2,3", "--sizes=4KiB",
                            "--iters=4", "--rank_binary=" + fake, "--json=" + json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["workers"], 3);
  EXPECT_EQ(records[1]["elements"], 1024);
  EXPECT_EQ(records[1]["check_ok"], true);
  EXPECT_DOUBLE_EQ(records[1]["seconds_per_op"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(records[1]["busbw"].get<double>(), 4096 / 0.001 * 4 / 3 / 1e9);
}

TEST_F(RingBenchTest, ReportsRankFailuresAndWrongValues) {
  const std::string fake = source_dir_ + "/tests/bench/fake_ring_rank.sh";
  const std::vector<std::string> args = {"ring",        "--implementations=ringside",
                                         "--workers=2", "--sizes=4KiB",
                                         "--iters=1",   "--rank_binary=" + fake};
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
