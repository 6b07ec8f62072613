#include "common/sign_codec.h"

#include <cmath>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_cat.h"

namespace ringside {

namespace {

// The sign payload of sign_codec.h, for SegmentCodec.
struct SignEncoding {
  size_t EncodedBytes(size_t elements) const { return 4 + (elements + 7) / 8; }

  void Encode(const SegmentKey&, absl::Span<float> values, char* wire) const {
    Pack(MeanMagnitude<false>(nullptr, values), values, wire);
  }

  // The add folded into the scale's pass: each sum is stored and its magnitude counted at once.
  void EncodeAdded(const SegmentKey&, absl::Span<const float> gradient, absl::Span<float> residual,
                   char* wire) const {
    Pack(MeanMagnitude<true>(gradient.data(), residual), residual, wire);
  }

  // The scale and the signs of `values` into `wire`, each value left with what the wire does not
  // carry of it.
  static void Pack(float scale, absl::Span<float> values, char* wire) {
    StoreF32(wire, scale);
    auto* bits = reinterpret_cast<unsigned char*>(wire + 4);
    // Eight elements a byte, without a branch; the segment's last part byte alone.
    const size_t whole = values.size() / 8;
    for (size_t byte = 0; byte < whole; ++byte) {
      bits[byte] = PackEight(scale, values.data() + 8 * byte);
    }
    if (values.size() % 8 != 0) {
      bits[whole] = PackByte<0>(scale, values.data() + 8 * whole, values.size() % 8);
    }
  }

  // The mean magnitude of `values` (with kAdding, of values[i] + gradient[i], each sum stored
  // into values[i] first), in double: a segment's sum of magnitudes may be large. Summed in
  // eight lanes (element i into lane i mod 8, the lanes then added in order), a fixed grouping,
  // so the scale is the same wherever and however it is computed; with SSE2 (every x86-64) two
  // lanes an instruction.
  template <bool kAdding>
  static float MeanMagnitude(const float* gradient, absl::Span<float> values) {
    if (values.empty()) return 0.0f;
    double lanes[8] = {};
    float* value = values.data();  // unchecked (gradient_codec.h's AddInto says why)
    const size_t whole = values.size() / 8 * 8;
#if defined(__SSE2__)
    const __m128 magnitude_bits = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128d pairs[4] = {};  // lanes (0, 1), (2, 3), (4, 5), (6, 7)
    for (size_t i = 0; i < whole; i += 8) {
      for (size_t half = 0; half < 2; ++half) {
        __m128 four = _mm_loadu_ps(value + i + 4 * half);
        if (kAdding) {
          four = _mm_add_ps(four, _mm_loadu_ps(gradient + i + 4 * half));
          _mm_storeu_ps(value + i + 4 * half, four);
        }
        const __m128 magnitude = _mm_and_ps(four, magnitude_bits);
        pairs[2 * half] = _mm_add_pd(pairs[2 * half], _mm_cvtps_pd(magnitude));
        pairs[2 * half + 1] =
            _mm_add_pd(pairs[2 * half + 1], _mm_cvtps_pd(_mm_movehl_ps(magnitude, magnitude)));
      }
    }
    for (size_t pair = 0; pair < 4; ++pair) _mm_storeu_pd(lanes + 2 * pair, pairs[pair]);
#else
    for (size_t i = 0; i < whole; i += 8) {
      for (size_t j = 0; j < 8; ++j) {
        if (kAdding) value[i + j] += gradient[i + j];
        lanes[j] += std::fabs(value[i + j]);
      }
    }
#endif
    for (size_t i = whole; i < values.size(); ++i) {
      if (kAdding) value[i] += gradient[i];
      lanes[i % 8] += std::fabs(value[i]);
    }
    double sum = 0;
    for (const double lane : lanes) sum += lane;
    return static_cast<float>(sum / static_cast<double>(values.size()));
  }

  // The signs of `count` (at most eight) elements (bit j: element j is at least 0), each
  // element left with what the wire does not carry of it. `kCount`: count when it is known at
  // compile time (a whole byte), 0 otherwise.
  template <size_t kCount>
  static unsigned char PackByte(float scale, float* values, size_t count) {
    if (kCount != 0) count = kCount;
    unsigned packed = 0;
    for (size_t j = 0; j < count; ++j) {
      const bool positive = values[j] >= 0.0f;
      packed |= static_cast<unsigned>(positive) << j;
      values[j] -= positive ? scale : -scale;
    }
    return static_cast<unsigned char>(packed);
  }

  // PackByte of eight elements. With SSE2 (every x86-64) four at a time, the sign bits taken
  // by movemask: no compiler turns the shifts of PackByte into it. The same bits either way.
  static unsigned char PackEight(float scale, float* values) {
#if defined(__SSE2__)
    const __m128 zero = _mm_setzero_ps();
    const __m128 up = _mm_set1_ps(scale);
    const __m128 down = _mm_set1_ps(-scale);
    unsigned packed = 0;
    for (int half = 0; half < 2; ++half) {
      float* four = values + 4 * half;
      const __m128 value = _mm_loadu_ps(four);
      const __m128 positive = _mm_cmpge_ps(value, zero);
      const __m128 sent = _mm_or_ps(_mm_and_ps(positive, up), _mm_andnot_ps(positive, down));
      _mm_storeu_ps(four, _mm_sub_ps(value, sent));
      packed |= static_cast<unsigned>(_mm_movemask_ps(positive)) << (4 * half);
    }
    return static_cast<unsigned char>(packed);
#else
    return PackByte<8>(scale, values, 8);
#endif
  }

  // Adds `count` (at most eight) elements' signed scale, as PackByte packed them, into `sum`:
  // the segment's last part byte (whole bytes go through AddChecked's table).
  static void AddByte(float scale, unsigned packed, float* sum, size_t count) {
    for (size_t j = 0; j < count; ++j) sum[j] += (packed >> j) & 1 ? scale : -scale;
  }

  absl::Status Check(const SegmentKey&, absl::string_view wire, size_t elements) const {
    if (wire.size() != EncodedBytes(elements)) {
      return absl::InvalidArgumentError(absl::StrCat("sign payload of ", wire.size(),
                                                     " bytes; a segment of ", elements,
                                                     " elements takes ", EncodedBytes(elements)));
    }
    const float scale = LoadF32(wire.data());
    if (!std::isfinite(scale) || scale < 0.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("sign payload's scale ", scale, " is not a finite magnitude"));
    }
    if (elements % 8 != 0) {
      const auto last = static_cast<unsigned char>(wire.back());
      if ((last >> (elements % 8)) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("sign payload sets bits past its segment's ", elements, " elements"));
      }
    }
    return absl::OkStatus();
  }

  void AddChecked(const SegmentKey&, absl::string_view wire, absl::Span<float> sum) const {
    const float scale = LoadF32(wire.data());
    const auto* bits = reinterpret_cast<const unsigned char*>(wire.data() + 4);
    // What four bits add, for each of their 16 values: a whole byte is two loads from it and
    // two four-wide adds. With SSE2 (every x86-64) written so: the compiler, unsure the sum does
    // not overlap the table, adds one float at a time (the shifts of AddByte it does not
    // vectorise either).
    alignas(16) float signed_scale[16][4];
    for (unsigned nibble = 0; nibble < 16; ++nibble) {
      for (unsigned j = 0; j < 4; ++j) signed_scale[nibble][j] = (nibble >> j) & 1 ? scale : -scale;
    }
    const size_t whole = sum.size() / 8;
    float* out = sum.data();  // unchecked (gradient_codec.h's AddInto says why)
    for (size_t byte = 0; byte < whole; ++byte) {
      const float* low = signed_scale[bits[byte] & 15];
      const float* high = signed_scale[bits[byte] >> 4];
      float* eight = out + 8 * byte;
#if defined(__SSE2__)
      _mm_storeu_ps(eight, _mm_add_ps(_mm_loadu_ps(eight), _mm_load_ps(low)));
      _mm_storeu_ps(eight + 4, _mm_add_ps(_mm_loadu_ps(eight + 4), _mm_load_ps(high)));
#else
      for (size_t j = 0; j < 4; ++j) eight[j] += low[j];
      for (size_t j = 0; j < 4; ++j) eight[4 + j] += high[j];
#endif
    }
    if (sum.size() % 8 != 0) AddByte(scale, bits[whole], sum.data() + 8 * whole, sum.size() % 8);
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeSignCodec() {
  return std::make_unique<SegmentCodec<SignEncoding>>();
}

}  // namespace ringside
