#include "worker/device.h"

#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

TEST(ParseDeviceTest, AcceptsTheFlagForms) {
  EXPECT_EQ(ParseDevice("auto")->kind, DeviceSpec::Kind::kAuto);
  EXPECT_EQ(ParseDevice("cpu")->kind, DeviceSpec::Kind::kCpu);
  EXPECT_EQ(ParseDevice("cuda")->kind, DeviceSpec::Kind::kCuda);
  EXPECT_EQ(ParseDevice("cuda")->index, 0);
  EXPECT_EQ(ParseDevice("cuda:3")->index, 3);
  EXPECT_EQ(ParseDevice("cuda:3")->ToString(), "cuda:3");
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda:5000", "cuda0"}) {
    EXPECT_EQ(ParseDevice(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MakeGradientComputerTest, CpuAlwaysWorksAndAutoNeverFails) {
  auto spec = ModelSpec::Parse("4,16,3", "relu");
  ASSERT_TRUE(spec.ok());
  auto cpu = MakeGradientComputer("cpu", *spec);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->device(), "cpu");
  auto automatic = MakeGradientComputer("auto", *spec);
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_EQ((*automatic)->device(), CudaDeviceCount().ok() ? "cuda:0" : "cpu");
  EXPECT_EQ(MakeGradientComputer("tpu", *spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MakeGradientComputerTest, CudaWithoutADeviceIsAClearErrorNotACrash) {
  auto spec = ModelSpec::Parse("4,16,3", "relu");
  ASSERT_TRUE(spec.ok());
  const absl::StatusOr<int> devices = CudaDeviceCount();
  if (devices.ok()) {
    auto beyond = MakeGradientComputer(absl::StrCat("cuda:", *devices), *spec);
    EXPECT_EQ(beyond.status().code(), absl::StatusCode::kFailedPrecondition);
    GTEST_SKIP() << *devices << " CUDA device(s) present: only the out-of-range index checked";
  }
  EXPECT_EQ(devices.status().code(), BuiltWithCuda() ? absl::StatusCode::kFailedPrecondition
                                                     : absl::StatusCode::kUnavailable);
  auto cuda = MakeGradientComputer("cuda", *spec);
  EXPECT_EQ(cuda.status().code(), devices.status().code());
  EXPECT_NE(cuda.status().message().find("--device=cuda"), absl::string_view::npos)
      << cuda.status();
}

}  // namespace
}  // namespace ringside::worker
