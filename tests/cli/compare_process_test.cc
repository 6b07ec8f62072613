// `ringside compare` end to end (issue 6): the real binary starts its clusters, and its JSON
// must agree with the cost model, between the modes, and with Iris's expected accuracy.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "common/temp_dir.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

TEST(CompareCommandTest, MeasuredBytesMatchTheModelAndTheModesAgree) {
  auto dir = TempDir::Create("ringside-compare-test-");
  ASSERT_TRUE(dir.ok());
  SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "compare", "--model=4,16,3", "--steps=300",
                "--workers=3", "--ps_shards=2", "--json=" + dir->File("out.json"),
                "--report=" + dir->File("out.html")};
  spawn.log_path = dir->File("compare.log");
  auto process = Subprocess::Spawn(spawn);
  ASSERT_TRUE(process.ok()) << process.status();
  auto exit = process->Wait(absl::Seconds(240));
  ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << TailOfFile(spawn.log_path, 20);
  ASSERT_TRUE(exit->ok()) << exit->ToString() << "\n" << TailOfFile(spawn.log_path, 20);

  const nlohmann::json json = nlohmann::json::parse(ReadFileToString(dir->File("out.json")).value());
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
  }
  // Relative to the largest parameter: the two modes sum the same shares in different orders.
  ASSERT_TRUE(json["parity"]["max_rel_param_diff"].is_number());
  EXPECT_LE(json["parity"]["max_rel_param_diff"].get<double>(), 1e-5);
  EXPECT_GE(json["parity"]["max_abs_param_diff"].get<double>(), 0.0);
  EXPECT_GT(ReadFileToString(dir->File("out.html")).value().size(), 1000u);
}

}  // namespace
}  // namespace ringside
