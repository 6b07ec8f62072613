// The gradient codecs (common/gradient_codec.h and one file per kind), the --compression spec
// (common/compression.h) and error feedback (common/error_feedback.h), in memory: exact sizes at
// odd segment lengths, what each codec keeps and leaves behind, every refusal of a malformed
// payload (and that it writes nothing), and that error feedback loses nothing over steps.
#include "common/compression.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/counter_rng.h"
#include "common/error_feedback.h"
#include "common/randomk_codec.h"
#include "common/sign_codec.h"
#include "common/topk_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/topk_payload.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

constexpr size_t kOddSizes[] = {1, 2, 7, 9, 13, 64, 65, 1001};

std::vector<float> Gradient(size_t n, uint64_t seed) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>(CounterNormal(seed, RngStream::kParameters, i));
  }
  return values;
}

std::string Encoded(const GradientCodec& codec, const SegmentKey& key, std::vector<float>& values) {
  std::string wire(codec.EncodedBytes(values.size()), '\xab');
  codec.Encode(key, absl::MakeSpan(values), wire.data());
  return wire;
}

// A payload's check fails with INVALID_ARGUMENT naming `what`, and DecodeAdd leaves the sum as
// it was.
void ExpectRefused(const GradientCodec& codec, const SegmentKey& key, const std::string& wire,
                   size_t elements, const std::string& what) {
  std::vector<float> sum(elements, 3.0f);
  const absl::Status status = codec.DecodeAdd(key, wire, absl::MakeSpan(sum));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(what));
  EXPECT_EQ(sum, std::vector<float>(elements, 3.0f)) << "a refused payload wrote into the sum";
}

TEST(CompressionSpecTest, ParsesAndWritesBack) {
  for (const char* text : {"none", "sign", "topk:0.01", "topk:1", "randomk:0.25", "topk:0.001",
                           "powersgd:1", "powersgd:32"}) {
    const absl::StatusOr<Compression> compression = ParseCompression(text);
    ASSERT_TRUE(compression.ok()) << text << ": " << compression.status();
    EXPECT_EQ(CompressionText(*compression), text);
  }
  EXPECT_EQ(ParseCompression("topk:0.01")->kind, CompressionKind::kTopK);
  EXPECT_FLOAT_EQ(ParseCompression("randomk:0.5")->fraction, 0.5f);
  EXPECT_EQ(ParseCompression("powersgd:4")->rank, 4);
  EXPECT_EQ(ParseCompression("powersgd:4")->kind, CompressionKind::kPowerSgd);
  for (const char* text :
       {"", "topk", "topk:", "topk:0", "topk:1.5", "topk:-0.1", "topk:nan", "sign:1", "powersgd",
        "powersgd:0", "powersgd:33", "powersgd:1.5", "powersgd:-1", "randomk:x", "TOPK:0.1"}) {
    const absl::StatusOr<Compression> compression = ParseCompression(text);
    EXPECT_EQ(compression.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(CompressionSpecTest, KindsFitTheirModes) {
  const Compression topk = *ParseCompression("topk:0.1");
  const Compression sign = *ParseCompression("sign");
  const Compression randomk = *ParseCompression("randomk:0.1");
  const Compression powersgd = *ParseCompression("powersgd:2");
  EXPECT_TRUE(CheckCompressionFitsMode(Compression{}, SyncMode::kRing).ok());
  for (const Compression& kind : {randomk, powersgd}) {
    EXPECT_TRUE(CheckCompressionFitsMode(kind, SyncMode::kRing).ok());
    EXPECT_THAT(std::string(CheckCompressionFitsMode(kind, SyncMode::kPs).message()),
                HasSubstr("does not fit ps mode"));
  }
  EXPECT_TRUE(CheckCompressionFitsMode(Compression{}, SyncMode::kPs).ok());
  EXPECT_TRUE(CheckCompressionFitsMode(topk, SyncMode::kPs).ok());
  EXPECT_TRUE(CheckCompressionFitsMode(sign, SyncMode::kPs).ok());
  for (const Compression& kind : {topk, sign}) {
    const absl::Status status = CheckCompressionFitsMode(kind, SyncMode::kRing);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr("does not fit ring mode"));
  }
  EXPECT_EQ(MakeGradientCodec(Compression{}), nullptr);
  EXPECT_EQ(MakeGradientCodec(powersgd), nullptr) << "no segment codec";
  EXPECT_NE(MakeGradientCodec(topk), nullptr);
}

TEST(CompressionSpecTest, WarmUpStepsAreNotCompressed) {
  const Compression topk = *ParseCompression("topk:0.1");
  EXPECT_FALSE(CompressesStep(topk, 3, 0));
  EXPECT_FALSE(CompressesStep(topk, 3, 2));
  EXPECT_TRUE(CompressesStep(topk, 3, 3));
  EXPECT_TRUE(CompressesStep(topk, 0, 0));
  EXPECT_FALSE(CompressesStep(Compression{}, 0, 10));
}

TEST(TopKCodecTest, CountIsCeilingClampedToTheSegment) {
  EXPECT_EQ(TopKCount(0, 0.5f), 0u);
  EXPECT_EQ(TopKCount(1, 0.001f), 1u);
  EXPECT_EQ(TopKCount(1001, 0.01f), 11u);
  EXPECT_EQ(TopKCount(1000, 0.01f), 10u);
  EXPECT_EQ(TopKCount(7, 1.0f), 7u);
  EXPECT_EQ(TopKCount(10, 0.3f), 3u);  // not 4: 0.3f is a little above 0.3
}

TEST(TopKCodecTest, SendsTheLargestMagnitudesWithSortedIndicesAndKeepsTheRest) {
  const std::unique_ptr<GradientCodec> owned = MakeTopKCodec(0.1f);
  const GradientCodec& codec = *owned;
  for (const size_t n : kOddSizes) {
    const std::vector<float> original = Gradient(n, n);
    std::vector<float> values = original;
    const std::string wire = Encoded(codec, {}, values);
    const size_t k = TopKCount(n, 0.1f);
    ASSERT_EQ(wire.size(), 4 + 8 * k) << n;
    ASSERT_TRUE(codec.Check({}, wire, n).ok()) << n;
    std::vector<float> decoded(n, 1.0f);
    ASSERT_TRUE(codec.Decode({}, wire, absl::MakeSpan(decoded)).ok());
    // Decoded plus what was left is the input, bit for bit: a value is sent whole or not at all.
    size_t sent = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(decoded[i] == 0.0f || values[i] == 0.0f) << i;
      EXPECT_EQ(decoded[i] + values[i], original[i]) << i;
      sent += decoded[i] != 0.0f ? 1 : 0;
    }
    EXPECT_EQ(sent, k) << n;
    // The k sent are the k largest magnitudes: the smallest sent is at least the largest kept.
    float smallest_sent = std::numeric_limits<float>::infinity(), largest_kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (decoded[i] != 0.0f) smallest_sent = std::min(smallest_sent, std::fabs(decoded[i]));
      largest_kept = std::max(largest_kept, std::fabs(values[i]));
    }
    EXPECT_GE(smallest_sent, largest_kept) << n;
  }
}

TEST(TopKCodecTest, TiesAtTheThresholdTakeTheLowestIndices) {
  const std::unique_ptr<GradientCodec> owned = MakeTopKCodec(0.5f);
  const GradientCodec& codec = *owned;
  std::vector<float> values = {1, -1, 1, 5, 1, -1};  // k = 3: the 5, then two of the 1s
  const std::string wire = Encoded(codec, {}, values);
  EXPECT_EQ(LoadU32(wire.data() + 4), 0u);
  EXPECT_EQ(LoadU32(wire.data() + 8), 1u);
  EXPECT_EQ(LoadU32(wire.data() + 12), 3u);
  EXPECT_EQ(values, (std::vector<float>{0, 0, 1, 0, 1, -1}));
}

// The selection by a sampled threshold (topk_codec.h) is the selection over every magnitude:
// the indices a plain reference takes (the k largest magnitudes, the lowest indices among those
// equal to the k-th) on large segments, where the sample is used, with ties at the threshold,
// many equal values (the estimate gathers them all), huge values at exactly the sampled elements,
// so the estimate gathers fewer than k and the selection falls back to every element, magnitudes
// over 2^-100 .. 2^100 (every round of the radix selection) and mostly zeros.
TEST(TopKCodecTest, TheSampledSelectionIsTheFullOne) {
  const auto reference = [](const std::vector<float>& values, size_t k) {
    std::vector<uint32_t> order(values.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return std::fabs(values[a]) > std::fabs(values[b]);
    });
    order.resize(k);
    std::sort(order.begin(), order.end());
    return order;
  };
  for (const float fraction : {0.001f, 0.01f, 0.1f}) {
    const std::unique_ptr<GradientCodec> codec = MakeTopKCodec(fraction);
    for (int shape = 0; shape < 6; ++shape) {
      SCOPED_TRACE(::testing::Message() << "F = " << fraction << ", shape " << shape);
      std::vector<float> values(65536 + 7);
      const size_t k = TopKCount(values.size(), fraction);
      const size_t stride = values.size() / TopKSampleSize(values.size(), k);
      for (size_t i = 0; i < values.size(); ++i) {
        const float normal = static_cast<float>(CounterNormal(5, RngStream::kParameters, i));
        values[i] = shape == 0   ? normal
                    : shape == 1 ? std::round(normal * 4) / 4  // ties at every magnitude
                    : shape == 2 ? 1.0f                        // all equal
                    : shape == 3 ? (i % stride == 0 ? 1e6f + normal : 1e-3f * normal)
                    : shape == 4 ? std::ldexp(normal, static_cast<int>(i * 7919 % 201) - 100)
                                 : (i % 3 == 0 ? normal : 0.0f);  // mostly zeros
      }
      const std::vector<uint32_t> expected = reference(values, k);
      std::vector<float> left = values;
      const std::string wire = Encoded(*codec, {}, left);
      ASSERT_EQ(LoadU32(wire.data()), k);
      std::vector<uint32_t> taken(k);
      for (size_t j = 0; j < k; ++j) taken[j] = LoadU32(wire.data() + 4 + 4 * j);
      EXPECT_EQ(taken, expected);
      for (size_t j = 0; j < k; ++j) {
        EXPECT_EQ(LoadF32(wire.data() + 4 + 4 * k + 4 * j), values[taken[j]]);
        EXPECT_EQ(left[taken[j]], 0.0f);
      }
    }
  }
}

using ringside::testing::TopKPayload;

TEST(TopKCodecTest, RefusesEveryMalformedPayloadAndWritesNothing) {
  const std::unique_ptr<GradientCodec> owned = MakeTopKCodec(0.3f);  // 10 elements: k = 3
  const GradientCodec& codec = *owned;
  ASSERT_TRUE(codec.Check({}, TopKPayload(3, {0, 4, 9}, {1, 2, 3}), 10).ok());
  ExpectRefused(codec, {}, TopKPayload(3, {0, 4, 10}, {1, 2, 3}), 10, "outside the segment");
  ExpectRefused(codec, {}, TopKPayload(3, {0, 4, 4}, {1, 2, 3}), 10, "strictly increase");
  ExpectRefused(codec, {}, TopKPayload(3, {0, 5, 4}, {1, 2, 3}), 10, "strictly increase");
  ExpectRefused(codec, {}, TopKPayload(2, {0, 4, 9}, {1, 2, 3}), 10, "counts 2 values");
  ExpectRefused(codec, {}, TopKPayload(3, {0, 4}, {1, 2}), 10, "bytes");
  ExpectRefused(codec, {}, TopKPayload(3, {0, 4, 9}, {1, 2, 3}) + "x", 10, "bytes");
  ExpectRefused(codec, {}, "ab", 10, "has no count");
  ExpectRefused(codec, {}, TopKPayload(3, {0, 4, 9}, {1, std::nanf(""), 3}), 10, "not finite");
  ExpectRefused(codec, {},
                TopKPayload(3, {0, 4, 9}, {1, 2, std::numeric_limits<float>::infinity()}), 10,
                "not finite");
}

TEST(SignCodecTest, OneBitPerElementAndTheMeanMagnitudeAsScale) {
  const std::unique_ptr<GradientCodec> owned = MakeSignCodec();
  const GradientCodec& codec = *owned;
  for (const size_t n : kOddSizes) {
    const std::vector<float> original = Gradient(n, 100 + n);
    std::vector<float> values = original;
    const std::string wire = Encoded(codec, {}, values);
    ASSERT_EQ(wire.size(), 4 + (n + 7) / 8) << n;
    ASSERT_TRUE(codec.Check({}, wire, n).ok()) << n;
    double magnitudes = 0;
    for (const float v : original) magnitudes += std::fabs(v);
    const float scale = static_cast<float>(magnitudes / static_cast<double>(n));
    EXPECT_EQ(LoadF32(wire.data()), scale);
    std::vector<float> decoded(n);
    ASSERT_TRUE(codec.Decode({}, wire, absl::MakeSpan(decoded)).ok());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(decoded[i], original[i] >= 0 ? scale : -scale) << i;
      EXPECT_EQ(values[i], original[i] - decoded[i]) << i;  // the residual, as computed
    }
  }
}

TEST(SignCodecTest, RefusesEveryMalformedPayloadAndWritesNothing) {
  const std::unique_ptr<GradientCodec> owned = MakeSignCodec();
  const GradientCodec& codec = *owned;
  std::string wire(4 + 2, '\0');  // 13 elements
  StoreF32(wire.data(), 0.5f);
  wire[4] = '\xff';
  wire[5] = '\x1f';  // bits 8..12
  ASSERT_TRUE(codec.Check({}, wire, 13).ok());
  ExpectRefused(codec, {}, wire.substr(0, 5), 13, "takes 6");
  ExpectRefused(codec, {}, wire + std::string(1, '\0'), 13, "takes 6");
  std::string padded = wire;
  padded[5] = '\x3f';  // bit 13 is past the segment
  ExpectRefused(codec, {}, padded, 13, "past its segment");
  for (const float scale : {std::nanf(""), -1.0f, std::numeric_limits<float>::infinity()}) {
    std::string bad = wire;
    StoreF32(bad.data(), scale);
    ExpectRefused(codec, {}, bad, 13, "not a finite magnitude");
  }
}

TEST(RandomKCodecTest, CoordinatesAreDistinctAscendingAndTheSameForEveryWorker) {
  const SegmentKey key{7, 12, 4096};
  for (const size_t n : kOddSizes) {
    for (const size_t k : {size_t{1}, (n + 1) / 2, n}) {
      const std::vector<uint32_t> coordinates = RandomKCoordinates(key, n, k);
      ASSERT_EQ(coordinates.size(), k);
      EXPECT_TRUE(std::is_sorted(coordinates.begin(), coordinates.end()));
      EXPECT_EQ(std::adjacent_find(coordinates.begin(), coordinates.end()), coordinates.end());
      EXPECT_LT(coordinates.back(), n);
      EXPECT_EQ(RandomKCoordinates(key, n, k), coordinates);
    }
  }
  // Another step, segment or seed draws other coordinates.
  const std::vector<uint32_t> base = RandomKCoordinates(key, 1001, 50);
  EXPECT_NE(RandomKCoordinates({7, 13, 4096}, 1001, 50), base);
  EXPECT_NE(RandomKCoordinates({7, 12, 0}, 1001, 50), base);
  EXPECT_NE(RandomKCoordinates({8, 12, 4096}, 1001, 50), base);
}

// One coordinate in each of k consecutive strata (the first n mod k one element longer), each
// element drawn about k/n of the steps (within 40%: over 5 standard deviations here).
TEST(RandomKCodecTest, OneCoordinateInEachStratumEveryElementAlike) {
  constexpr size_t kElements = 103, kK = 10, kSteps = 2000;  // strata of 11 (three) and 10
  std::vector<int> drawn(kElements, 0);
  for (int64_t step = 0; step < static_cast<int64_t>(kSteps); ++step) {
    const std::vector<uint32_t> coordinates = RandomKCoordinates({5, step, 0}, kElements, kK);
    size_t first = 0;
    for (size_t j = 0; j < kK; ++j) {
      const size_t length = j < 3 ? 11 : 10;
      EXPECT_GE(coordinates[j], first) << "step " << step << " stratum " << j;
      EXPECT_LT(coordinates[j], first + length) << "step " << step << " stratum " << j;
      first += length;
    }
    for (const uint32_t i : coordinates) ++drawn[i];
  }
  for (size_t i = 0; i < kElements; ++i) {
    const double expected = static_cast<double>(kSteps) / (i < 33 ? 11 : 10);
    EXPECT_GT(drawn[i], 0.6 * expected) << "element " << i;
    EXPECT_LT(drawn[i], 1.4 * expected) << "element " << i;
  }
}

TEST(RandomKCodecTest, PayloadsOfOneSegmentAddValueByValueAsARingHopAddsThem) {
  const std::unique_ptr<GradientCodec> owned = MakeRandomKCodec(0.1f);
  const GradientCodec& codec = *owned;
  const SegmentKey key{1, 3, 65};
  for (const size_t n : kOddSizes) {
    std::vector<float> a = Gradient(n, 1), b = Gradient(n, 2);
    const std::vector<float> a0 = a, b0 = b;
    const std::string wire_a = Encoded(codec, key, a), wire_b = Encoded(codec, key, b);
    ASSERT_EQ(wire_a.size(), 4 * TopKCount(n, 0.1f));
    // The hop: the received values plus its own, value by value, without decoding.
    std::string hop(wire_a.size(), '\0');
    for (size_t j = 0; j < hop.size() / 4; ++j) {
      StoreF32(hop.data() + 4 * j, LoadF32(wire_a.data() + 4 * j) + LoadF32(wire_b.data() + 4 * j));
    }
    std::vector<float> summed_hop(n), summed_apart(n, 0.0f);
    ASSERT_TRUE(codec.Decode(key, hop, absl::MakeSpan(summed_hop)).ok());
    ASSERT_TRUE(codec.DecodeAdd(key, wire_a, absl::MakeSpan(summed_apart)).ok());
    ASSERT_TRUE(codec.DecodeAdd(key, wire_b, absl::MakeSpan(summed_apart)).ok());
    EXPECT_EQ(summed_hop, summed_apart) << n;
    // Sent whole where chosen, kept whole elsewhere.
    std::vector<float> decoded_a(n);
    ASSERT_TRUE(codec.Decode(key, wire_a, absl::MakeSpan(decoded_a)).ok());
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(decoded_a[i] + a[i], a0[i]) << i;
  }
}

TEST(RandomKCodecTest, RefusesEveryMalformedPayloadAndWritesNothing) {
  const std::unique_ptr<GradientCodec> owned = MakeRandomKCodec(0.3f);  // 10 elements: 3 values
  const GradientCodec& codec = *owned;
  std::string wire(12, '\0');
  ASSERT_TRUE(codec.Check({}, wire, 10).ok());
  ExpectRefused(codec, {}, wire.substr(0, 8), 10, "takes 12");
  ExpectRefused(codec, {}, wire + "abcd", 10, "takes 12");
  StoreF32(wire.data() + 8, std::nanf(""));
  ExpectRefused(codec, {}, wire, 10, "not finite");
}

// With error feedback, everything computed is either sent or still held: the decoded
// transmissions plus the residual add up to the gradients' sum, and a small coordinate that
// top-k never picks alone is sent once its residual has grown.
TEST(ErrorFeedbackTest, NothingIsLostOnlyDelayed) {
  for (const char* kind : {"topk:0.1", "sign", "randomk:0.2"}) {
    const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(*ParseCompression(kind));
    constexpr size_t kElements = 37;
    ErrorFeedback feedback(kElements);
    std::vector<double> computed(kElements, 0.0), delivered(kElements, 0.0);
    std::vector<bool> ever_sent(kElements, false);
    for (int64_t step = 0; step < 200; ++step) {
      std::vector<float> gradient = Gradient(kElements, 1000 + step);
      gradient[5] = 0.05f;  // small, but always the same sign
      // Two segments, as a push cuts a share: [0, 20) and [20, 37).
      for (const auto& [at, n] : {std::pair<size_t, size_t>{0, 20}, {20, 17}}) {
        const SegmentKey key{1, step, at};
        std::string segment(codec->EncodedBytes(n), '\0');
        feedback.Encode(*codec, key, at, absl::MakeConstSpan(gradient).subspan(at, n),
                        segment.data());
        std::vector<float> decoded(n);
        ASSERT_TRUE(codec->Decode(key, segment, absl::MakeSpan(decoded)).ok());
        for (size_t i = 0; i < n; ++i) {
          delivered[at + i] += decoded[i];
          ever_sent[at + i] = ever_sent[at + i] || decoded[i] != 0.0f;
        }
      }
      for (size_t i = 0; i < kElements; ++i) computed[i] += gradient[i];
    }
    for (size_t i = 0; i < kElements; ++i) {
      EXPECT_NEAR(delivered[i] + feedback.residual()[i], computed[i], 1e-3) << kind << " " << i;
      EXPECT_TRUE(ever_sent[i]) << kind << " never sent element " << i;
    }
    feedback.Reset();
    EXPECT_TRUE(std::all_of(feedback.residual().begin(), feedback.residual().end(),
                            [](float r) { return r == 0.0f; }));
  }
}

// Error feedback's one call, the add folded into the codec's pass, leaves exactly the wire and
// the residual of the add and then the encode: at odd sizes, on large segments where top-k
// samples, and where its estimate gathers fewer than k and it falls back to every element.
TEST(ErrorFeedbackTest, TheFoldedAddIsTheAddThenTheEncode) {
  std::vector<size_t> sizes(std::begin(kOddSizes), std::end(kOddSizes));
  sizes.push_back(65536 + 7);
  for (const char* kind : {"topk:0.001", "topk:0.01", "topk:0.3", "sign", "randomk:0.05"}) {
    const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(*ParseCompression(kind));
    for (const size_t n : sizes) {
      for (const bool spiked : {false, true}) {
        SCOPED_TRACE(::testing::Message() << kind << ", " << n << " elements"
                                          << (spiked ? ", huge where F = 0.01 samples" : ""));
        std::vector<float> gradient = Gradient(n, 7);
        // Huge at the elements top-k's sample of F = 0.01 reads: where the segment is large
        // enough for a sample, its estimate gathers fewer than k and the selection falls back.
        const size_t stride = n / TopKSampleSize(n, TopKCount(n, 0.01f));
        for (size_t i = 0; spiked && i < n; i += stride) gradient[i] += 1e6f;
        const std::vector<float> residual = Gradient(n, 8);
        const SegmentKey key{3, 4, 5};
        std::vector<float> added = residual;
        AddInto(gradient, absl::MakeSpan(added));
        const std::string expected = Encoded(*codec, key, added);
        std::vector<float> folded = residual;
        std::string wire(codec->EncodedBytes(n), '\xab');
        codec->EncodeAdded(key, gradient, absl::MakeSpan(folded), wire.data());
        EXPECT_EQ(wire, expected);
        EXPECT_EQ(folded, added);
      }
    }
  }
}

TEST(ErrorFeedbackTest, AddTouchesOnlyItsSegment) {
  ErrorFeedback feedback(6);
  const std::vector<float> gradient = {1.5f, -2.0f, 0.25f};
  feedback.Add(2, gradient);
  feedback.Add(3, absl::MakeConstSpan(gradient).subspan(0, 2));
  EXPECT_EQ(std::vector<float>(feedback.residual().begin(), feedback.residual().end()),
            (std::vector<float>{0.0f, 0.0f, 1.5f, -0.5f, -1.75f, 0.0f}));
}

}  // namespace
}  // namespace ringside
