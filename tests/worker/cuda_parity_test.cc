// CPU and CUDA must agree: forward loss, predictions and the flat gradient within 1e-4.
#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"
#include "tests/worker/test_util.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

TEST(CudaParityTest, CpuAndCudaAgreeOnLossAndGradient) {
  if (auto reason = testing::NoCudaReason()) GTEST_SKIP() << "no CUDA device: " << *reason;
  for (const auto& [layers, activation, rows] :
       {std::make_tuple("4,16,3", "tanh", 32), std::make_tuple("20,64,32,10", "relu", 100),
        std::make_tuple("20,64,32,10", "softplus", 7),
        std::make_tuple("64,256,256,10", "elu", 128)}) {
    auto spec = ModelSpec::Parse(layers, activation);
    ASSERT_TRUE(spec.ok());
    auto cpu = MakeGradientComputer("cpu", *spec);
    auto gpu = MakeGradientComputer("cuda", *spec);
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status();
    const std::vector<float> params = InitialParameters(*spec, 3);
    const OwnedBatch batch = testing::RandomBatch(*spec, rows, 8);
    GradientOptions options;
    options.normalizer_rows = 2 * rows;  // the data-parallel scaling goes through both paths
    std::vector<float> g_cpu(spec->parameter_count()), g_gpu(spec->parameter_count(), NAN);
    auto s_cpu = (*cpu)->ComputeGradient(params, batch.view(), absl::MakeSpan(g_cpu), options);
    auto s_gpu = (*gpu)->ComputeGradient(params, batch.view(), absl::MakeSpan(g_gpu), options);
    ASSERT_TRUE(s_cpu.ok() && s_gpu.ok()) << s_gpu.status();
    EXPECT_NEAR(s_cpu->mean_loss, s_gpu->mean_loss, 1e-4 * std::max(1.0, s_cpu->mean_loss));
    EXPECT_EQ(s_cpu->correct, s_gpu->correct);
    double scale = 0.0;
    for (float v : g_cpu) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    for (size_t i = 0; i < g_cpu.size(); ++i) {
      ASSERT_NEAR(g_gpu[i], g_cpu[i], 1e-4 * std::max(scale, 1e-3))
          << layers << "/" << activation << " element " << i;
    }
    std::vector<int32_t> p_cpu(rows), p_gpu(rows);
    auto e_cpu = (*cpu)->Evaluate(params, batch.view(), absl::MakeSpan(p_cpu));
    auto e_gpu = (*gpu)->Evaluate(params, batch.view(), absl::MakeSpan(p_gpu));
    ASSERT_TRUE(e_cpu.ok() && e_gpu.ok());
    EXPECT_NEAR(e_cpu->mean_loss, e_gpu->mean_loss, 1e-4 * std::max(1.0, e_cpu->mean_loss));
    EXPECT_EQ(p_cpu, p_gpu);
  }
}

}  // namespace
}  // namespace ringside::worker
