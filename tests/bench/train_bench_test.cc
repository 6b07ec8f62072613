// Multi-process tests of `ringside-bench train`: the real binary runs `ringside compare` for
// both modes. No timing assertions: only that each implementation ran and reported figures.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/bench/bench_process_fixture.h"
#include "tests/support/idx_files.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

using TrainBenchTest = BenchProcessTest;

TEST_F(TrainBenchTest, BothModesReportSamplesPerSecondAndWorkerMemory) {
  const std::string json = dir_->File("out.json");
  const BenchRun run =
      Run({"train", "--torch=off", "--runs=2", "--model=4,8,3", "--steps=5", "--rows=64",
           "--batch_size=8", "--workers=2", "--ps_shards=1", "--json=" + json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 4u) << records.dump();  // 2 runs x (ring, ps)
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& record = records[i];
    EXPECT_EQ(record["implementation"], i % 2 == 0 ? "ringside-ring" : "ringside-ps");
    EXPECT_EQ(record["run"], 1 + static_cast<int>(i) / 2);
    EXPECT_EQ(record["workers"], 2);
    EXPECT_GT(record["samples_per_second"].get<double>(), 0) << record.dump();
    EXPECT_GT(record["step_seconds_p50"].get<double>(), 0) << record.dump();
    EXPECT_GT(record["peak_rss_bytes"].get<int64_t>(), int64_t{1} << 20) << record.dump();
  }
  EXPECT_THAT(run.output, HasSubstr("samples/s ringside-ps / ringside-ring: median"));
}

// On real data (a small Fashion-MNIST the test writes) every Ringside mode reports its test
// accuracy at the run's steps and its time to the target, as the PyTorch baseline would.
TEST_F(TrainBenchTest, OnFashionMnistEachModeReportsTestAccuracyAndTimeToTarget) {
  const std::string data = dir_->File("data");
  ASSERT_EQ(mkdir(data.c_str(), 0755), 0);
  ASSERT_TRUE(testing::WriteTinyFashionMnist(data, 200, 50));
  const std::string json = dir_->File("out.json");
  const BenchRun run =
      Run({"train", "--torch=off", "--runs=1", "--model=20,16,10", "--data=fashion-mnist:" + data,
           "--steps=20", "--eval_every=5", "--batch_size=8", "--workers=2", "--ps_shards=1",
           "--target_accuracy=0.3", "--json=" + json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u) << records.dump();
  for (const nlohmann::json& record : records) {
    EXPECT_EQ(record["data"], "fashion-mnist:" + data);
    EXPECT_EQ(record["lr"], 0.001) << "Adam's rate for this data unless --lr says otherwise";
    EXPECT_EQ(record["target_accuracy"], 0.3);
    ASSERT_TRUE(record["test_accuracy"].is_number()) << record.dump();
    EXPECT_GE(record["test_accuracy"].get<double>(), 0.0);
    EXPECT_LE(record["test_accuracy"].get<double>(), 1.0);
    EXPECT_TRUE(record["test_accuracy_recent_mean"].is_number()) << record.dump();
    EXPECT_EQ(record["seconds_to_target"].is_null(), record["steps_to_target"].is_null());
  }
  EXPECT_THAT(run.output, HasSubstr("test acc"));
  EXPECT_THAT(run.output, HasSubstr("to target"));
}

TEST_F(TrainBenchTest, DataItCannotTrainOnFailsAtOnce) {
  BenchRun run = Run({"train", "--torch=off", "--data=iris"});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("want synthetic, fashion-mnist"));
  run = Run({"train", "--torch=off", "--data=fashion-mnist:" + dir_->path()});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("t10k-labels-idx1-ubyte.gz"));
  run = Run({"train", "--torch=off", "--target_accuracy=2"});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--target_accuracy in (0, 1]"));
}

TEST_F(TrainBenchTest, RequiredTorchThatCannotRunFailsNamingIt) {
  const BenchRun run = Run({"train", "--torch=on", "--runs=1", "--model=4,8,3", "--steps=2",
                            "--rows=64", "--batch_size=8", "--workers=2", "--ps_shards=1",
                            "--torch_script=/nonexistent/ddp_train.py"});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("/nonexistent/ddp_train.py"));
}

TEST_F(TrainBenchTest, BadFlagsFailAtOnce) {
  const BenchRun run = Run({"train", "--torch=maybe"});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--torch must be auto, on or off"));
}

}  // namespace
}  // namespace ringside
