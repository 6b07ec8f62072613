// Finite-difference checks of the analytic gradient, for every activation, on every device
// present. Central differences of the float loss with eps = 1e-3: the rounding noise of a float
// loss (~1e-7) becomes ~5e-5 in the quotient, under the 2e-4 absolute part of the tolerance, and
// the truncation error O(eps^2) is negligible. ReLU and leaky ReLU are not differentiable at 0:
// a parameter whose +-eps step moves a pre-activation across 0 may be off; two such are allowed.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "tests/worker/test_util.h"
#include "worker/device.h"

namespace ringside::worker {

// Readable parameters in test output ("tanh", not "4-byte object").
void PrintTo(Activation activation, std::ostream* os) { *os << ActivationName(activation); }

namespace {

constexpr Activation kAllActivations[] = {
    Activation::kSigmoid, Activation::kTanh,  Activation::kRelu,     Activation::kLeakyRelu,
    Activation::kElu,     Activation::kSwish, Activation::kSoftplus,
};

class GradientCheckTest : public ::testing::TestWithParam<std::tuple<std::string, Activation>> {
 protected:
  void SetUp() override {
    if (std::get<0>(GetParam()) == "cuda") {
      if (auto reason = testing::NoCudaReason()) GTEST_SKIP() << "no CUDA device: " << *reason;
    }
  }
};

double Loss(GradientComputer& computer, const std::vector<float>& params, const Batch& batch) {
  auto eval = computer.Evaluate(params, batch, {});
  EXPECT_TRUE(eval.ok()) << eval.status();
  return eval.ok() ? eval->mean_loss : 0.0;
}

TEST_P(GradientCheckTest, AnalyticGradientMatchesCentralDifferences) {
  const auto [device, activation] = GetParam();
  auto spec = ModelSpec::Create({3, 5, 4, 3}, activation);
  ASSERT_TRUE(spec.ok());
  auto computer = MakeGradientComputer(device, *spec);
  ASSERT_TRUE(computer.ok()) << computer.status();
  std::vector<float> params = InitialParameters(*spec, 11);
  // Non-zero biases so every bias gradient is exercised away from the symmetric start.
  for (int l = 0; l < spec->num_weight_layers(); ++l) {
    auto bias = spec->Layer(absl::MakeSpan(params), l).bias;
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.15f;
  }
  const OwnedBatch batch = testing::RandomBatch(*spec, 6, 5);
  std::vector<float> gradient(spec->parameter_count());
  auto stats = (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_NEAR(stats->mean_loss, Loss(**computer, params, batch.view()), 1e-6);

  constexpr float kEps = 1e-3f;
  int checked = 0, kinks = 0;
  double worst = 0.0;  // largest error as a fraction of its tolerance
  for (size_t i = 0; i < params.size(); ++i) {
    const float original = params[i];
    params[i] = original + kEps;
    const double plus = Loss(**computer, params, batch.view());
    params[i] = original - kEps;
    const double minus = Loss(**computer, params, batch.view());
    params[i] = original;
    const double step = (original + kEps) - (original - kEps);  // the float step actually taken
    const double numeric = (plus - minus) / step;
    const double tolerance = 2e-4 + 1e-2 * std::fabs(numeric);
    if (std::fabs(numeric - gradient[i]) > tolerance &&
        (activation == Activation::kRelu || activation == Activation::kLeakyRelu)) {
      ++kinks;  // a pre-activation crossed zero inside [x - eps, x + eps]
      continue;
    }
    ++checked;
    worst = std::max(worst, std::fabs(numeric - gradient[i]) / tolerance);
    EXPECT_NEAR(gradient[i], numeric, tolerance) << "parameter " << i << " of " << params.size();
  }
  EXPECT_LE(kinks, 2) << "too many parameters off: not just kinks of the rectifier";
  EXPECT_GE(checked, static_cast<int>(params.size()) - 2);
  RecordProperty("worst_error_over_tolerance", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(AllActivations, GradientCheckTest,
                         ::testing::Combine(::testing::Values("cpu", "cuda"),
                                            ::testing::ValuesIn(kAllActivations)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::string(ActivationName(std::get<1>(info.param)));
                         });

TEST(LossTest, UniformLogitsGiveLogClassesAndTheExactOutputGradient) {
  auto spec = ModelSpec::Create({2, 4}, Activation::kTanh);  // no hidden layer: logits = xW + b
  ASSERT_TRUE(spec.ok());
  auto computer = MakeGradientComputer("cpu", *spec);
  ASSERT_TRUE(computer.ok());
  std::vector<float> params(spec->parameter_count(), 0.0f);
  OwnedBatch batch;
  batch.features = {1.0f, 2.0f, -1.0f, 0.5f};
  batch.labels = {3, 0};
  std::vector<float> gradient(params.size());
  auto stats = (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient));
  ASSERT_TRUE(stats.ok());
  EXPECT_NEAR(stats->mean_loss, std::log(4.0), 1e-6);
  // db = mean over rows of (softmax - onehot) = (0.25 - [0,0,0,1] + 0.25 - [1,0,0,0]) / 2.
  const auto db = spec->Layer(absl::MakeConstSpan(gradient), 0).bias;
  EXPECT_NEAR(db[0], -0.25, 1e-7);
  EXPECT_NEAR(db[1], 0.25, 1e-7);
  EXPECT_NEAR(db[2], 0.25, 1e-7);
  EXPECT_NEAR(db[3], -0.25, 1e-7);
  // dW[0][3] = mean(x0 * d3) = (1 * -0.75 + -1 * 0.25) / 2.
  EXPECT_NEAR(spec->Layer(absl::MakeConstSpan(gradient), 0).weights[3], -0.5, 1e-7);
}

TEST(ComputeGradientTest, EmptyBatchBadSizesAndLayerCallbacks) {
  auto spec = ModelSpec::Parse("3,5,4,3", "relu");
  ASSERT_TRUE(spec.ok());
  auto computer = MakeGradientComputer("cpu", *spec);
  ASSERT_TRUE(computer.ok());
  const std::vector<float> params = InitialParameters(*spec, 1);
  std::vector<float> gradient(spec->parameter_count(), 7.0f);
  std::vector<int> layers;
  GradientOptions options;
  options.on_layer_ready = [&](int layer, ElementRange range) {
    EXPECT_EQ(range, spec->layer_range(layer));
    layers.push_back(layer);
  };
  auto empty = (*computer)->ComputeGradient(params, Batch{}, absl::MakeSpan(gradient), options);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->rows, 0);
  for (float g : gradient) ASSERT_EQ(g, 0.0f);
  EXPECT_EQ(layers, (std::vector<int>{2, 1, 0}));

  layers.clear();
  OwnedBatch batch = testing::RandomBatch(*spec, 4, 2);
  ASSERT_TRUE(
      (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient), options).ok());
  EXPECT_EQ(layers, (std::vector<int>{2, 1, 0}));

  std::vector<float> short_gradient(3);
  EXPECT_EQ((*computer)
                ->ComputeGradient(params, batch.view(), absl::MakeSpan(short_gradient))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  batch.labels[1] = 3;  // classes are 0..2
  EXPECT_EQ(
      (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)).status().code(),
      absl::StatusCode::kInvalidArgument);
  batch.labels[1] = 0;
  batch.features.pop_back();
  EXPECT_EQ((*computer)->Evaluate(params, batch.view(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
