#include "common/optimizer.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "common/ranges.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

OptimizerConfig Config(OptimizerKind kind, float lr) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = lr;
  return config;
}

// Deterministic pseudo-random floats in [-1, 1).
std::vector<float> Values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

class OptimizerKindTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(OptimizerKindTest, RangeBySplitIsBitwiseEqualToWholeBuffer) {
  constexpr size_t kSize = 1003;
  const OptimizerConfig config = Config(GetParam(), 0.05f);
  std::vector<float> whole = Values(kSize, 1);
  auto whole_opt = Optimizer::Create(config, kSize);
  ASSERT_TRUE(whole_opt.ok());
  for (int parts : {2, 3, 7}) {
    std::vector<float> split = Values(kSize, 1);
    std::vector<float> reference = Values(kSize, 1);
    auto ref_opt = Optimizer::Create(config, kSize);
    ASSERT_TRUE(ref_opt.ok());
    const std::vector<ElementRange> ranges = EvenRanges(kSize, parts);
    std::vector<Optimizer> shards;
    for (const ElementRange& r : ranges) shards.push_back(*Optimizer::Create(config, r.size()));
    for (int step = 0; step < 5; ++step) {
      const std::vector<float> grads = Values(kSize, 100 + step);
      ASSERT_TRUE(ref_opt->Step(absl::MakeSpan(reference), grads).ok());
      for (size_t s = 0; s < ranges.size(); ++s) {
        const ElementRange& r = ranges[s];
        ASSERT_TRUE(shards[s]
                        .Step(absl::MakeSpan(split).subspan(r.begin, r.size()),
                              absl::MakeConstSpan(grads).subspan(r.begin, r.size()))
                        .ok());
      }
    }
    EXPECT_EQ(std::memcmp(split.data(), reference.data(), kSize * sizeof(float)), 0)
        << OptimizerName(GetParam()) << " split in " << parts;
  }
}

// A parameter-server shard applies each step in pieces as its segments arrive, in whatever
// sizes; the parameters and the state must be the bits Step() gives on the whole.
TEST_P(OptimizerKindTest, PiecesInAnyOrderAreBitwiseEqualToAWholeStep) {
  constexpr size_t kSize = 1003;
  const OptimizerConfig config = Config(GetParam(), 0.05f);
  std::vector<float> whole = Values(kSize, 2);
  std::vector<float> pieces = Values(kSize, 2);
  auto whole_opt = Optimizer::Create(config, kSize);
  auto piece_opt = Optimizer::Create(config, kSize);
  ASSERT_TRUE(whole_opt.ok() && piece_opt.ok());
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> grads = Values(kSize, 200 + step);
    ASSERT_TRUE(whole_opt->Step(absl::MakeSpan(whole), grads).ok());
    piece_opt->BeginStep();
    // Uneven pieces, the last first: [600, 1003), [0, 1), [1, 600).
    for (const ElementRange& r :
         {ElementRange{600, kSize}, ElementRange{0, 1}, ElementRange{1, 600}}) {
      ASSERT_TRUE(piece_opt
                      ->StepPiece(r.begin, absl::MakeSpan(pieces).subspan(r.begin, r.size()),
                                  absl::MakeConstSpan(grads).subspan(r.begin, r.size()))
                      .ok());
    }
  }
  EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), kSize * sizeof(float)), 0);
  EXPECT_EQ(whole_opt->ExportState(), piece_opt->ExportState());
  std::vector<float> one(2);
  EXPECT_EQ(piece_opt->StepPiece(kSize - 1, absl::MakeSpan(one), one).code(),
            absl::StatusCode::kInvalidArgument)
      << "a piece past the end";
}

INSTANTIATE_TEST_SUITE_P(All, OptimizerKindTest,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kMomentum,
                                           OptimizerKind::kAdam),
                         [](const auto& info) { return std::string(OptimizerName(info.param)); });

TEST(OptimizerTest, SgdKnownStep) {
  auto opt = Optimizer::Create(Config(OptimizerKind::kSgd, 0.5f), 2);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f, -2.0f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), std::vector<float>{0.25f, -1.0f}).ok());
  EXPECT_FLOAT_EQ(p[0], 0.875f);
  EXPECT_FLOAT_EQ(p[1], -1.5f);
}

TEST(OptimizerTest, MomentumKnownSteps) {
  OptimizerConfig config = Config(OptimizerKind::kMomentum, 0.1f);
  config.momentum = 0.5f;
  auto opt = Optimizer::Create(config, 1);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), std::vector<float>{2.0f}).ok());
  EXPECT_FLOAT_EQ(p[0], 0.8f);  // v = 2, p = 1 - 0.1 * 2
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), std::vector<float>{2.0f}).ok());
  EXPECT_FLOAT_EQ(p[0], 0.5f);  // v = 0.5 * 2 + 2 = 3, p = 0.8 - 0.3
}

TEST(OptimizerTest, AdamKnownSteps) {
  auto opt = Optimizer::Create(Config(OptimizerKind::kAdam, 0.01f), 3);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f, 1.0f, 1.0f};
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps) = lr * sign(g).
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), std::vector<float>{0.5f, -3.0f, 0.0f}).ok());
  EXPECT_NEAR(p[0], 0.99f, 1e-6);
  EXPECT_NEAR(p[1], 1.01f, 1e-6);
  EXPECT_EQ(p[2], 1.0f);
  // Step 2 with g = 1 on the first element (m = 0.9*0.05 + 0.1 = 0.145, v = 0.999*0.00025 +
  // 0.001 = 0.00124975): update = lr * (m / 0.19) / (sqrt(v / 0.001999) + eps).
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), std::vector<float>{1.0f, 0.0f, 0.0f}).ok());
  const double m_hat = 0.145 / (1 - 0.81), v_hat = 0.00124975 / (1 - 0.998001);
  EXPECT_NEAR(p[0], 0.99 - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-6);
  EXPECT_EQ(opt->steps(), 2);
}

TEST(OptimizerTest, RejectsBadInput) {
  EXPECT_EQ(ParseOptimizer("rmsprop").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOptimizer("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOptimizer("Adam").status().code(), absl::StatusCode::kInvalidArgument);
  for (absl::string_view name : {"sgd", "momentum", "adam"}) {
    auto kind = ParseOptimizer(name);
    ASSERT_TRUE(kind.ok()) << name;
    EXPECT_EQ(OptimizerName(*kind), name);
  }
  EXPECT_EQ(Optimizer::Create(Config(OptimizerKind::kSgd, 0.0f), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Optimizer::Create(Config(OptimizerKind::kSgd, NAN), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  OptimizerConfig adam = Config(OptimizerKind::kAdam, 0.1f);
  adam.beta2 = 1.0f;
  EXPECT_EQ(Optimizer::Create(adam, 1).status().code(), absl::StatusCode::kInvalidArgument);
  OptimizerConfig momentum = Config(OptimizerKind::kMomentum, 0.1f);
  momentum.momentum = -0.1f;
  EXPECT_EQ(Optimizer::Create(momentum, 1).status().code(), absl::StatusCode::kInvalidArgument);
  auto opt = Optimizer::Create(Config(OptimizerKind::kSgd, 0.1f), 2);
  std::vector<float> p(3), g(3);
  EXPECT_EQ(opt->Step(absl::MakeSpan(p), g).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(opt->steps(), 0);
}

TEST(OptimizerStateTest, AnImportedStateContinuesBitIdentically) {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  adam.learning_rate = 0.01f;
  auto a = Optimizer::Create(adam, 3);
  auto b = Optimizer::Create(adam, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> pa = {1, 2, 3}, grad = {0.5f, -0.25f, 0.125f};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a->Step(absl::MakeSpan(pa), grad).ok());
  ASSERT_TRUE(b->ImportState(a->ExportState()).ok());
  std::vector<float> pb = pa;
  ASSERT_TRUE(a->Step(absl::MakeSpan(pa), grad).ok());
  ASSERT_TRUE(b->Step(absl::MakeSpan(pb), grad).ok());
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(b->ImportState(std::vector<float>(2)).code(), absl::StatusCode::kInvalidArgument);
}

// What parameter-server mode relies on: a shard's optimiser over its range (restored from the
// range of the whole state) and a worker's optimiser over the whole vector, given the same summed
// gradient, stay bit-identical on that range step after step.
TEST(OptimizerStateTest, ARangesOptimiserStepsExactlyLikeTheWholeOnItsRange) {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  auto whole = Optimizer::Create(adam, 5);
  auto piece = Optimizer::Create(adam, 2);
  ASSERT_TRUE(whole.ok() && piece.ok());
  std::vector<float> params = {1, 2, 3, 4, 5}, grad = {0.5f, -1, 2, 0.25f, -0.5f};
  ASSERT_TRUE(whole->Step(absl::MakeSpan(params), grad).ok());
  ASSERT_TRUE(piece->ImportState(OptimizerStateRange(whole->ExportState(), 5, 2, 4)).ok())
      << "a range's state fits a range-sized optimiser";
  std::vector<float> range_params = {params[2], params[3]};
  for (int step = 0; step < 50; ++step) {
    for (size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(0.7f * step + i) * 1e-3f;
    ASSERT_TRUE(whole->Step(absl::MakeSpan(params), grad).ok());
    ASSERT_TRUE(piece->Step(absl::MakeSpan(range_params), {grad[2], grad[3]}).ok());
    ASSERT_EQ(range_params[0], params[2]) << "step " << step;
    ASSERT_EQ(range_params[1], params[3]) << "step " << step;
  }
  EXPECT_EQ(piece->ExportState(), OptimizerStateRange(whole->ExportState(), 5, 2, 4));
}

// A regroup that reads the shards' states joins their ranges back into the whole state.
TEST(OptimizerStateTest, PlacingEveryRangeRebuildsTheWholeState) {
  auto whole = Optimizer::Create(OptimizerConfig{OptimizerKind::kAdam, 0.01f}, 5);
  ASSERT_TRUE(whole.ok());
  std::vector<float> params = {1, 2, 3, 4, 5};
  ASSERT_TRUE(whole->Step(absl::MakeSpan(params), {0.5f, -1, 2, 0.25f, -0.5f}).ok());
  const std::vector<float> state = whole->ExportState();
  std::vector<float> rebuilt(state.size(), -7.0f);
  for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, 2}, {2, 2}, {2, 5}}) {
    ASSERT_TRUE(PlaceOptimizerStateRange(OptimizerStateRange(state, 5, begin, end), 5, begin, end,
                                         absl::MakeSpan(rebuilt))
                    .ok());
  }
  EXPECT_EQ(rebuilt, state);
  EXPECT_EQ(PlaceOptimizerStateRange(OptimizerStateRange(state, 5, 0, 2), 5, 0, 3,
                                     absl::MakeSpan(rebuilt))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlaceOptimizerStateRange(OptimizerStateRange(state, 5, 3, 5), 5, 3, 6,
                                     absl::MakeSpan(rebuilt))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OptimizerStateTest, ExportStateToChecksTheBufferSize) {
  auto adam = Optimizer::Create(OptimizerConfig{OptimizerKind::kAdam, 0.01f}, 3);
  ASSERT_TRUE(adam.ok());
  std::vector<float> fits(adam->state_size(), -1.0f), short_by_one(adam->state_size() - 1);
  ASSERT_TRUE(adam->ExportStateTo(absl::MakeSpan(fits)).ok());
  EXPECT_EQ(fits, adam->ExportState());
  EXPECT_EQ(adam->ExportStateTo(absl::MakeSpan(short_by_one)).code(),
            absl::StatusCode::kInvalidArgument);
}

// A regroup broadcasts the state in pieces and a shard load streams it: pieces at every offset
// and length read what ExportState holds there, and written into another optimiser in any
// order rebuild it, step count included.
TEST(OptimizerStateTest, PiecesReadAndWriteTheExportedLayoutInPlace) {
  auto adam = Optimizer::Create(OptimizerConfig{OptimizerKind::kAdam, 0.01f}, 5);
  auto copy = Optimizer::Create(OptimizerConfig{OptimizerKind::kAdam, 0.01f}, 5);
  ASSERT_TRUE(adam.ok() && copy.ok());
  std::vector<float> params = {1, 2, 3, 4, 5};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(adam->Step(absl::MakeSpan(params), {0.5f, -1, 2, 0.25f, -0.5f}).ok());
  }
  const std::vector<float> whole = adam->ExportState();  // 11 floats
  for (size_t offset = 0; offset <= whole.size(); ++offset) {
    for (size_t length = 0; offset + length <= whole.size(); ++length) {
      std::vector<float> piece(length, -9.0f);
      ASSERT_TRUE(adam->ExportStatePiece(offset, absl::MakeSpan(piece)).ok());
      ASSERT_EQ(piece, std::vector<float>(whole.begin() + offset, whole.begin() + offset + length))
          << "[" << offset << ", " << offset + length << ")";
    }
  }
  for (const auto& [begin, end] : {std::pair<size_t, size_t>{7, 11}, {0, 3}, {3, 7}}) {
    ASSERT_TRUE(
        copy->ImportStatePiece(begin, absl::MakeConstSpan(whole).subspan(begin, end - begin)).ok());
  }
  EXPECT_EQ(copy->ExportState(), whole);
  EXPECT_EQ(copy->steps(), 3);
  std::vector<float> next = params;
  ASSERT_TRUE(adam->Step(absl::MakeSpan(params), {1, 1, 1, 1, 1}).ok());
  ASSERT_TRUE(copy->Step(absl::MakeSpan(next), {1, 1, 1, 1, 1}).ok());
  EXPECT_EQ(next, params) << "the imported step count gives the same bias correction";

  const std::vector<float> before = copy->ExportState();
  std::vector<float> two(2);
  EXPECT_EQ(adam->ExportStatePiece(10, absl::MakeSpan(two)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(copy->ImportStatePiece(12, {}).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<float> negative_steps = {-1.0f, 0.0f};
  EXPECT_EQ(copy->ImportStatePiece(0, negative_steps).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(copy->ExportState(), before) << "a refused piece changes nothing";
}

}  // namespace
}  // namespace ringside
