// The 16-bit wire encodings against reference values: IEEE 754 half and bfloat16, rounding to
// nearest even, subnormals, infinities, NaN, and the buffer functions' exact sizes.
#include "common/wire_dtype.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(WireDtypeTest, NamesAndSizes) {
  for (const char* name : {"fp32", "fp16", "bf16"}) {
    const absl::StatusOr<WireDtype> dtype = ParseWireDtype(name);
    ASSERT_TRUE(dtype.ok()) << name;
    EXPECT_EQ(WireDtypeName(*dtype), name);
  }
  EXPECT_FALSE(ParseWireDtype("fp8").ok());
  EXPECT_FALSE(ParseWireDtype("").ok());
  EXPECT_EQ(WireBytesPerElement(WireDtype::kFp32), 4u);
  EXPECT_EQ(WireBytesPerElement(WireDtype::kFp16), 2u);
  EXPECT_EQ(WireBytesPerElement(WireDtype::kBf16), 2u);
}

TEST(WireDtypeTest, Fp16ReferenceValues) {
  struct Case {
    float value;
    uint16_t bits;
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (const Case& c : std::vector<Case>{
           {0.0f, 0x0000},
           {-0.0f, 0x8000},
           {1.0f, 0x3c00},
           {-2.0f, 0xc000},
           {0.5f, 0x3800},
           {65504.0f, 0x7bff},  // the largest finite half
           {65519.0f, 0x7bff},  // below the midpoint to infinity
           {65520.0f, 0x7c00},  // the midpoint: ties to even, infinity
           {1e6f, 0x7c00},      // overflow
           {-1e6f, 0xfc00},
           {inf, 0x7c00},
           {-inf, 0xfc00},
           {std::ldexp(1.0f, -14), 0x0400},         // the smallest normal
           {std::ldexp(1.0f, -24), 0x0001},         // the smallest subnormal
           {std::ldexp(1.0f, -25), 0x0000},         // half of it: ties to even, zero
           {std::ldexp(3.0f, -26), 0x0001},         // three quarters of it: rounds up
           {std::ldexp(1023.0f, -24), 0x03ff},      // the largest subnormal
           {1.0f + std::ldexp(1.0f, -11), 0x3c00},  // a tie between 1 and 1+2^-10: even
           {1.0f + std::ldexp(3.0f, -11), 0x3c02},  // a tie between odd and even: even, up
       }) {
    EXPECT_EQ(FloatToFp16(c.value), c.bits) << c.value;
  }
  EXPECT_EQ(Fp16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Fp16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Fp16ToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(Fp16ToFloat(0xfc00), -inf);
  EXPECT_TRUE(std::signbit(Fp16ToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(Fp16ToFloat(0x7c01)));  // a signalling NaN decodes to NaN
}

TEST(WireDtypeTest, EveryFp16ValueRoundTripsExactly) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = Fp16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(FloatToFp16(value), bits) << std::hex << bits;
  }
}

TEST(WireDtypeTest, Bf16ReferenceValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: even, down
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie: even, up
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(FloatToBf16(inf), 0x7f80);
  EXPECT_EQ(FloatToBf16(-inf), 0xff80);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToBf16(std::ldexp(1.0f, -133)), 0x0001);  // a bf16 subnormal
  EXPECT_EQ(Bf16ToFloat(0x0001), std::ldexp(1.0f, -133));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
  // A NaN whose payload sits in the low bits only must not round to infinity.
  uint32_t low_nan_bits = 0x7f800001;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, sizeof(low_nan));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(low_nan))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = Bf16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(FloatToBf16(value), bits) << std::hex << bits;
  }
}

TEST(WireDtypeTest, BuffersAtOddSizesEncodeDecodeAndAddInFloat32) {
  for (const WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}}) {
      std::vector<float> values(n);
      for (size_t i = 0; i < n; ++i) values[i] = 0.25f * static_cast<float>(i % 64) - 3.0f;
      // One guard byte past the end: nothing may be written there.
      std::vector<char> wire(n * WireBytesPerElement(dtype) + 1, '\x5a');
      EncodeWire(dtype, values, wire.data());
      EXPECT_EQ(wire.back(), '\x5a');
      std::vector<float> decoded(n, -1.0f);
      DecodeWire(dtype, wire.data(), absl::MakeSpan(decoded));
      // Quarter steps from -3 to 12.75 are exact in all three types (bf16 keeps 8 bits).
      EXPECT_EQ(decoded, values);
      std::vector<float> sum(n, 1.0f);
      DecodeAddWire(dtype, wire.data(), absl::MakeSpan(sum));
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], values[i] + 1.0f) << i;
    }
  }
}

// Pieces cut at every byte position, read in runs of every length: the same floats as one
// contiguous decode (and add), for every dtype; a read past the pieces' end says so.
TEST(WireDtypeTest, PiecesCutAnywhereReadLikeOneBuffer) {
  std::vector<float> values(9);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.5f * static_cast<float>(i) - 3.25f;
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    const size_t width = WireBytesPerElement(dtype);
    std::string wire(values.size() * width, '\0');
    EncodeWire(dtype, values, wire.data());
    std::vector<float> expected(values.size());
    DecodeWire(dtype, wire.data(), absl::MakeSpan(expected));
    for (size_t cut_a = 0; cut_a <= wire.size(); ++cut_a) {
      for (size_t cut_b = cut_a; cut_b <= wire.size(); ++cut_b) {
        const absl::string_view bytes(wire);
        const std::vector<absl::string_view> pieces = {
            bytes.substr(0, cut_a), bytes.substr(cut_a, cut_b - cut_a), bytes.substr(cut_b)};
        for (size_t run = 1; run <= values.size(); ++run) {
          std::vector<float> read(values.size(), 1.0f);
          WirePiecesReader reader(dtype, pieces);
          for (size_t at = 0; at < values.size(); at += run) {
            const size_t length = std::min(run, values.size() - at);
            ASSERT_TRUE(reader.Read(absl::MakeSpan(read).subspan(at, length), /*add=*/true));
          }
          for (size_t i = 0; i < values.size(); ++i) {
            ASSERT_EQ(read[i], expected[i] + 1.0f) << WireDtypeName(dtype) << " cut " << cut_a
                                                   << "," << cut_b << " run " << run << " " << i;
          }
          std::vector<float> extra(1);
          EXPECT_FALSE(reader.Read(absl::MakeSpan(extra), /*add=*/false));
        }
      }
    }
  }
}

// The fused hop (decode, add, encode in one pass) writes exactly the bytes of the three steps
// apart, at an odd address, for values whose sums round in 16 bits; and it does so from pieces
// cut at every byte position, with a read past the pieces' end refused.
TEST(WireDtypeTest, FusedAddAndEncodeWritesTheBytesOfTheStepsApart) {
  std::vector<float> received(11);
  std::vector<float> own(received.size());
  for (size_t i = 0; i < received.size(); ++i) {
    received[i] = 1.0f / static_cast<float>(i + 3) - 0.125f * static_cast<float>(i);
    own[i] = 3.0f / static_cast<float>(2 * i + 7) + 1e-3f * static_cast<float>(i);
  }
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    const size_t width = WireBytesPerElement(dtype);
    std::string wire(received.size() * width, '\0');
    EncodeWire(dtype, received, wire.data());
    std::vector<float> sum = own;
    DecodeAddWire(dtype, wire.data(), absl::MakeSpan(sum));
    std::string expected(wire.size(), '\0');
    EncodeWire(dtype, sum, expected.data());

    // One byte in (unaligned for every dtype) and a guard byte past the end.
    std::string out(wire.size() + 2, '\x5a');
    DecodeAddEncodeWire(dtype, wire.data(), own, out.data() + 1);
    EXPECT_EQ(out.substr(1, wire.size()), expected);
    EXPECT_EQ(out.front(), '\x5a');
    EXPECT_EQ(out.back(), '\x5a');

    for (size_t cut_a = 0; cut_a <= wire.size(); ++cut_a) {
      for (size_t cut_b = cut_a; cut_b <= wire.size(); ++cut_b) {
        const absl::string_view bytes(wire);
        const std::vector<absl::string_view> pieces = {
            bytes.substr(0, cut_a), bytes.substr(cut_a, cut_b - cut_a), bytes.substr(cut_b)};
        WirePiecesReader reader(dtype, pieces);
        std::string pieced(wire.size(), '\0');
        const size_t half = own.size() / 2;
        ASSERT_TRUE(reader.ReadSumEncoded(absl::MakeSpan(own).subspan(0, half), pieced.data()));
        ASSERT_TRUE(
            reader.ReadSumEncoded(absl::MakeSpan(own).subspan(half), pieced.data() + half * width));
        ASSERT_EQ(pieced, expected) << "cut " << cut_a << "," << cut_b;
        char extra[sizeof(float)];
        EXPECT_FALSE(reader.ReadSumEncoded(absl::MakeSpan(own).subspan(0, 1), extra));
      }
    }
  }
}

TEST(WireDtypeTest, NonFiniteValuesAreCounted) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(CountNonFinite(std::vector<float>{1.0f, 2.0f}), 0u);
  EXPECT_EQ(CountNonFinite(std::vector<float>{std::nanf(""), 1.0f, -inf, inf}), 3u);
  // fp16 overflow of a sum shows as infinities: the reason to pre-divide before encoding.
  EXPECT_EQ(CountNonFinite(std::vector<float>{Fp16ToFloat(FloatToFp16(65504.0f * 4))}), 1u);
  EXPECT_EQ(CountNonFinite(std::vector<float>{Fp16ToFloat(FloatToFp16(65504.0f * 4 / 4))}), 0u);
}

TEST(WireDtypeTest, MessageElementTypesMapBothWaysAndUnknownOnesAreRefused) {
  // The numbers are on the wire (proto/ring.proto, proto/ps.proto): they never change.
  EXPECT_EQ(WireDtypeNumber(WireDtype::kFp32), 1u);
  EXPECT_EQ(WireDtypeNumber(WireDtype::kFp16), 2u);
  EXPECT_EQ(WireDtypeNumber(WireDtype::kBf16), 3u);
  EXPECT_EQ(WireDtypeNumberName(1), "float32");
  EXPECT_EQ(WireDtypeNumberName(2), "float16");
  EXPECT_EQ(WireDtypeNumberName(3), "bfloat16");
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    EXPECT_EQ(ElementSizeOfNumber(WireDtypeNumber(dtype)), WireBytesPerElement(dtype));
    absl::StatusOr<WireDtype> back = WireDtypeOfNumber(WireDtypeNumber(dtype));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
  for (uint32_t unknown : {kNoWireDtypeNumber, 4u, 77u}) {
    EXPECT_EQ(WireDtypeOfNumber(unknown).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ElementSizeOfNumber(unknown), 0u);
    EXPECT_EQ(WireDtypeNumberName(unknown), "invalid");
  }
}

TEST(WireDtypeTest, OnlyFp16DividesSharesAndOnlyByTheWorkerCount) {
  EXPECT_EQ(WireShareDivisor(WireDtype::kFp16, 4), 4.0f);
  EXPECT_EQ(WireShareDivisor(WireDtype::kFp16, 1), 1.0f);
  EXPECT_EQ(WireShareDivisor(WireDtype::kBf16, 4), 1.0f);
  EXPECT_EQ(WireShareDivisor(WireDtype::kFp32, 4), 1.0f);
  std::vector<float> values = {3.0f, -6.0f, 0.0f};
  DivideShare(absl::MakeSpan(values), 3.0f);
  EXPECT_EQ(values, (std::vector<float>{1.0f, -2.0f, 0.0f}));
  MultiplySum(absl::MakeSpan(values), 3.0f);
  EXPECT_EQ(values, (std::vector<float>{3.0f, -6.0f, 0.0f}));
}

TEST(WireDtypeTest, RoundingToTheWireGivesWhatADecoderReadsAndLeavesFp32Alone) {
  const std::vector<float> values = {0.1f, -1234.567f, 3.0e-8f, 70000.0f, 1.0f / 3};
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    SCOPED_TRACE(WireDtypeName(dtype));
    std::vector<float> rounded = values;
    RoundToWire(dtype, absl::MakeSpan(rounded));
    std::string wire(values.size() * WireBytesPerElement(dtype), '\0');
    EncodeWire(dtype, values, wire.data());
    std::vector<float> decoded(values.size());
    DecodeWire(dtype, wire.data(), absl::MakeSpan(decoded));
    EXPECT_EQ(std::memcmp(rounded.data(), decoded.data(), values.size() * sizeof(float)), 0);
    // Encoding a rounded value again is exact: an allgather may forward what it decoded.
    std::string again(wire.size(), '\0');
    EncodeWire(dtype, rounded, again.data());
    EXPECT_EQ(again, wire);
  }
  EXPECT_NE(Fp16ToFloat(FloatToFp16(0.1f)), 0.1f);  // so the fp16 case above rounded something
}

TEST(WireDtypeTest, RelativeL2ErrorAgainstTheExactSum) {
  EXPECT_EQ(RelativeL2Error(std::vector<float>{1, 2}, std::vector<float>{1, 2}), 0.0);
  EXPECT_DOUBLE_EQ(RelativeL2Error(std::vector<float>{3, 4.5f}, std::vector<float>{3, 4}),
                   0.5 / 5.0);
  EXPECT_EQ(RelativeL2Error(std::vector<float>{}, std::vector<float>{}), 0.0);
  EXPECT_TRUE(std::isinf(RelativeL2Error(std::vector<float>{1}, std::vector<float>{0})));
  EXPECT_TRUE(
      std::isnan(RelativeL2Error(std::vector<float>{std::nanf("")}, std::vector<float>{1})));
}

}  // namespace
}  // namespace ringside
