#include "bench/compute_bench.h"

#include <sstream>

#include "gtest/gtest.h"

namespace ringside::bench {
namespace {

TEST(ComputeBenchTest, MeasuresCpuAndReportsAbsentDevicesAsSkipped) {
  ComputeBenchOptions options;
  options.models = {"4,16,3", "8,32,4"};
  options.devices = {"cpu", "cuda"};
  options.batch_size = 16;
  options.min_seconds = 0.0;
  options.warmup_steps = 1;
  options.max_steps = 3;
  auto records = MeasureCompute(options);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  for (const ComputeBenchRecord& r : *records) {
    if (r.device == "cpu") {
      EXPECT_TRUE(r.skipped.empty());
      EXPECT_GE(r.steps, 1);
      EXPECT_GT(r.samples_per_second, 0.0);
    } else if (!r.skipped.empty()) {
      EXPECT_NE(r.skipped.find("cuda"), std::string::npos) << r.skipped;
    }
  }
  std::ostringstream out;
  ASSERT_TRUE(RunComputeBench(options, out).ok());
  EXPECT_NE(out.str().find("samples/s"), std::string::npos);
  EXPECT_NE(out.str().find("8,32,4"), std::string::npos);
}

TEST(ComputeBenchTest, RejectsBadOptions) {
  ComputeBenchOptions options;
  options.models = {"4,x,3"};
  std::ostringstream out;
  EXPECT_EQ(RunComputeBench(options, out).code(), absl::StatusCode::kInvalidArgument);
  options = ComputeBenchOptions();
  options.devices = {"gpu"};
  EXPECT_EQ(RunComputeBench(options, out).code(), absl::StatusCode::kInvalidArgument);
  options = ComputeBenchOptions();
  options.batch_size = 0;
  EXPECT_EQ(RunComputeBench(options, out).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::bench
