#include "common/model_spec.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

TEST(ParseLayersTest, AcceptsSparkStyleLists) {
  auto layers = ParseLayers("4,16,3");
  ASSERT_TRUE(layers.ok()) << layers.status();
  EXPECT_EQ(*layers, (std::vector<int>{4, 16, 3}));
  EXPECT_EQ(*ParseLayers(" 784, 1024 ,1024,10 "), (std::vector<int>{784, 1024, 1024, 10}));
  EXPECT_EQ(*ParseLayers("2,2"), (std::vector<int>{2, 2}));
}

TEST(ParseLayersTest, RejectsBadInputWithInvalidArgument) {
  for (const char* bad :
       {"", "4", "4,", ",4,3", "4,0,3", "4,-16,3", "4,x,3", "4,16.5,3", "4;16;3", "4,16,1",
        "4,2000000,3", "4,99999999999999999999,3", "100000,100000,100000,10"}) {
    auto layers = ParseLayers(bad);
    EXPECT_EQ(layers.status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
    EXPECT_NE(layers.status().message().find("bad model"), absl::string_view::npos) << bad;
  }
  std::string many = "2";
  for (int i = 0; i < kMaxLayers; ++i) many += ",2";
  EXPECT_EQ(ParseLayers(many).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseActivationTest, RoundTripsAndRejectsUnknown) {
  for (const char* name : {"sigmoid", "tanh", "relu", "leaky_relu", "elu", "swish", "softplus"}) {
    auto act = ParseActivation(name);
    ASSERT_TRUE(act.ok()) << name;
    EXPECT_EQ(ActivationName(*act), name);
  }
  for (const char* bad : {"", "ReLU", "gelu", "softmax"}) {
    EXPECT_EQ(ParseActivation(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ModelSpec::Parse("4,16,3", "bogus").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelSpec::Create({4}, Activation::kTanh).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelSpecTest, FlatLayoutIsWeightsThenBiasLayerByLayer) {
  auto spec = ModelSpec::Parse("4,16,3", "relu");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->parameter_count(), 4u * 16 + 16 + 16 * 3 + 3);
  EXPECT_EQ(spec->weight_range(0), (ElementRange{0, 64}));
  EXPECT_EQ(spec->bias_range(0), (ElementRange{64, 80}));
  EXPECT_EQ(spec->weight_range(1), (ElementRange{80, 128}));
  EXPECT_EQ(spec->bias_range(1), (ElementRange{128, 131}));
  EXPECT_EQ(spec->ToString(), "4,16,3/relu");
  std::vector<float> flat(spec->parameter_count());
  LayerView<float> layer = spec->Layer(absl::MakeSpan(flat), 1);
  EXPECT_EQ(layer.fan_in, 16);
  EXPECT_EQ(layer.fan_out, 3);
  EXPECT_EQ(layer.weights.data(), flat.data() + 80);
  EXPECT_EQ(layer.bias.data(), flat.data() + 128);
  EXPECT_EQ(layer.bias.size(), 3u);
}

TEST(ModelSpecTest, BackpropBucketsPartitionTheBufferLastLayerFirst) {
  auto spec = ModelSpec::Parse("784,1024,1024,10", "relu");
  ASSERT_TRUE(spec.ok());
  for (uint64_t min_elements : {0ull, 10000ull, 1000000ull, 100000000ull}) {
    const auto buckets = BackpropBuckets(*spec, min_elements);
    ASSERT_FALSE(buckets.empty());
    uint64_t end = spec->parameter_count();
    int next_layer = spec->num_weight_layers() - 1;
    for (const GradientBucket& b : buckets) {
      EXPECT_EQ(b.range.end, end);
      EXPECT_EQ(b.last_layer, next_layer);
      EXPECT_EQ(b.range.begin, spec->layer_range(b.first_layer).begin);
      end = b.range.begin;
      next_layer = b.first_layer - 1;
    }
    EXPECT_EQ(end, 0u);
    EXPECT_EQ(next_layer, -1);
  }
  EXPECT_EQ(BackpropBuckets(*spec).size(), 3u);
  EXPECT_EQ(BackpropBuckets(*spec, 20000).size(), 2u);  // 10250 + 1049600 merge, then 803840
  EXPECT_EQ(BackpropBuckets(*spec, 100000000).size(), 1u);
}

TEST(InitTest, SameSeedIsBitIdenticalAndWithinLimits) {
  auto spec = ModelSpec::Parse("5,7,3", "tanh");
  ASSERT_TRUE(spec.ok());
  const std::vector<float> a = InitialParameters(*spec, 42);
  const std::vector<float> b = InitialParameters(*spec, 42);
  const std::vector<float> c = InitialParameters(*spec, 43);
  ASSERT_EQ(a.size(), spec->parameter_count());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_NE(a, c);
  const float limit0 = std::sqrt(6.0f / 12.0f);  // Xavier for tanh
  for (float w : spec->Layer(absl::MakeConstSpan(a), 0).weights) {
    EXPECT_LE(std::fabs(w), limit0);
  }
  for (float bias : spec->Layer(absl::MakeConstSpan(a), 1).bias) EXPECT_EQ(bias, 0.0f);
  // Golden values: the counter-based initialiser must give exactly these on every platform.
  EXPECT_EQ(a[0], 0x1.bec2a4p-4f);
  EXPECT_EQ(a[1], -0x1.d036e2p-3f);
  EXPECT_EQ(a[34], 0x1.a633cp-5f);
  EXPECT_EQ(a[42], 0x1.27b5d2p-1f);  // first weight of the output layer
  EXPECT_EQ(a[62], 0x1.bbea46p-5f);
  std::vector<float> wrong(3);
  EXPECT_EQ(InitializeParameters(*spec, 1, absl::MakeSpan(wrong)).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
