#include "common/sign_codec.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace ringside {

namespace {

// The sign payload of sign_codec.h, for SegmentCodec.
struct SignEncoding {
  size_t EncodedBytes(size_t elements) const { return 4 + (elements + 7) / 8; }

  void Encode(const SegmentKey&, absl::Span<float> values, char* wire) const {
    const float scale = MeanMagnitude(values);
    StoreF32(wire, scale);
    auto* bits = reinterpret_cast<unsigned char*>(wire + 4);
    // Eight elements a byte, without a branch, so the compiler vectorises the packing and the
    // residual's update; the segment's last part byte alone.
    const size_t whole = values.size() / 8;
    for (size_t byte = 0; byte < whole; ++byte) {
      bits[byte] = PackByte<8>(scale, values.data() + 8 * byte, 8);
    }
    if (values.size() % 8 != 0) {
      bits[whole] = PackByte<0>(scale, values.data() + 8 * whole, values.size() % 8);
    }
  }

  // The mean magnitude in double: a segment's sum of magnitudes may be large. Summed in eight
  // lanes (element i into lane i mod 8, the lanes then added in order), a fixed grouping, so
  // the scale is the same wherever it is computed, and one the compiler vectorises.
  static float MeanMagnitude(absl::Span<const float> values) {
    if (values.empty()) return 0.0f;
    double lanes[8] = {};
    const size_t whole = values.size() / 8 * 8;
    for (size_t i = 0; i < whole; i += 8) {
      for (size_t j = 0; j < 8; ++j) lanes[j] += std::fabs(values[i + j]);
    }
    for (size_t i = whole; i < values.size(); ++i) lanes[i % 8] += std::fabs(values[i]);
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

  // Adds `count` (at most eight) elements' signed scale, as PackByte packed them, into `sum`.
  template <size_t kCount>
  static void AddByte(float scale, unsigned packed, float* sum, size_t count) {
    if (kCount != 0) count = kCount;
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
    const size_t whole = sum.size() / 8;
    for (size_t byte = 0; byte < whole; ++byte) {
      AddByte<8>(scale, bits[byte], sum.data() + 8 * byte, 8);
    }
    if (sum.size() % 8 != 0) AddByte<0>(scale, bits[whole], sum.data() + 8 * whole, sum.size() % 8);
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeSignCodec() {
  return std::make_unique<SegmentCodec<SignEncoding>>();
}

}  // namespace ringside
