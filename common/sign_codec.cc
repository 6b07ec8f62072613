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
    // The mean magnitude in double: a segment's sum of magnitudes may be large, and the scale
    // must not depend on how the sum was grouped.
    double magnitudes = 0;
    for (const float value : values) magnitudes += std::fabs(value);
    const float scale =
        values.empty() ? 0.0f : static_cast<float>(magnitudes / static_cast<double>(values.size()));
    StoreF32(wire, scale);
    auto* bits = reinterpret_cast<unsigned char*>(wire + 4);
    for (size_t byte = 0; byte < (values.size() + 7) / 8; ++byte) {
      unsigned char packed = 0;
      for (size_t i = 8 * byte; i < values.size() && i < 8 * byte + 8; ++i) {
        const bool positive = values[i] >= 0.0f;
        packed |= static_cast<unsigned char>(positive ? 1u << (i % 8) : 0u);
        values[i] -= positive ? scale : -scale;
      }
      bits[byte] = packed;
    }
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
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] += (bits[i / 8] >> (i % 8)) & 1 ? scale : -scale;
    }
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeSignCodec() {
  return std::make_unique<SegmentCodec<SignEncoding>>();
}

}  // namespace ringside
