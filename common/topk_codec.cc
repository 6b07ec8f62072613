#include "common/topk_codec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

// The order the selection ranks by: magnitude. Encode's input is finite; a NaN still ranks
// (highest), so a broken caller cannot break nth_element's ordering.
float Magnitude(float value) {
  return std::isnan(value) ? std::numeric_limits<float>::infinity() : std::fabs(value);
}

}  // namespace

size_t TopKCount(size_t elements, float fraction) {
  if (elements == 0) return 0;
  // Less one part in a million, so the float's rounding of F (0.3f is 0.30000001) does not add
  // an element: 0.3 of 10 is 3.
  const double wanted =
      std::ceil(static_cast<double>(fraction) * static_cast<double>(elements) * (1 - 1e-6));
  return static_cast<size_t>(std::clamp(wanted, 1.0, static_cast<double>(elements)));
}

namespace {

// The topk payload of topk_codec.h, for SegmentCodec.
struct TopKEncoding {
  float fraction;  // F in (0, 1]

  size_t EncodedBytes(size_t elements) const { return 4 + 8 * TopKCount(elements, fraction); }

  void Encode(const SegmentKey&, absl::Span<float> values, char* wire) const {
    const size_t n = values.size();
    assert(n <= std::numeric_limits<uint32_t>::max());
    const size_t k = TopKCount(n, fraction);
    StoreU32(wire, static_cast<uint32_t>(k));
    if (k == 0) return;
    // The k-th largest magnitude, and how many of the k are above it (the rest tie with it).
    std::vector<float> magnitudes(n);
    std::transform(values.begin(), values.end(), magnitudes.begin(), Magnitude);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1), magnitudes.end(),
                     [](float a, float b) { return a > b; });
    const float threshold = magnitudes[k - 1];
    const size_t above =
        static_cast<size_t>(std::count_if(magnitudes.begin(), magnitudes.begin() + (k - 1),
                                          [threshold](float m) { return m > threshold; }));
    size_t ties = k - above;
    // One pass in index order: the indices come out sorted.
    char* index_at = wire + 4;
    char* value_at = wire + 4 + 4 * k;
    for (size_t i = 0; i < n; ++i) {
      const float m = Magnitude(values[i]);
      if (m > threshold || (m == threshold && ties > 0)) {
        if (!(m > threshold)) --ties;
        StoreU32(index_at, static_cast<uint32_t>(i));
        StoreF32(value_at, values[i]);
        index_at += 4;
        value_at += 4;
        values[i] = 0.0f;  // sent whole: nothing of it is left behind
      }
    }
    assert(index_at == wire + 4 + 4 * k);
  }

  absl::Status Check(const SegmentKey&, absl::string_view wire, size_t elements) const {
    if (elements > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("top-k segment of ", elements, " elements: more than 32-bit indices reach"));
    }
    const size_t k = TopKCount(elements, fraction);
    if (wire.size() < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("top-k payload of ", wire.size(), " bytes has no count"));
    }
    const uint32_t count = LoadU32(wire.data());
    if (count != k) {
      return absl::InvalidArgumentError(absl::StrCat("top-k payload counts ", count,
                                                     " values; a segment of ", elements,
                                                     " elements carries ", k));
    }
    if (wire.size() != EncodedBytes(elements)) {
      return absl::InvalidArgumentError(absl::StrCat("top-k payload of ", wire.size(), " bytes; ",
                                                     k, " values take ", EncodedBytes(elements)));
    }
    const char* indices = wire.data() + 4;
    const char* values = indices + 4 * k;
    int64_t previous = -1;
    for (size_t j = 0; j < k; ++j) {
      const uint32_t index = LoadU32(indices + 4 * j);
      if (index >= elements) {
        return absl::InvalidArgumentError(absl::StrCat("top-k index ", index, " (value ", j,
                                                       ") is outside the segment's ", elements,
                                                       " elements"));
      }
      if (static_cast<int64_t>(index) <= previous) {
        return absl::InvalidArgumentError(absl::StrCat("top-k index ", index, " (value ", j,
                                                       ") does not follow ", previous,
                                                       ": indices must strictly increase"));
      }
      previous = index;
      if (!std::isfinite(LoadF32(values + 4 * j))) {
        return absl::InvalidArgumentError(
            absl::StrCat("top-k value ", j, " (index ", index, ") is not finite"));
      }
    }
    return absl::OkStatus();
  }

  void AddChecked(const SegmentKey&, absl::string_view wire, absl::Span<float> sum) const {
    const size_t k = LoadU32(wire.data());
    const char* indices = wire.data() + 4;
    const char* values = indices + 4 * k;
    for (size_t j = 0; j < k; ++j) sum[LoadU32(indices + 4 * j)] += LoadF32(values + 4 * j);
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeTopKCodec(float fraction) {
  return std::make_unique<SegmentCodec<TopKEncoding>>(fraction);
}

}  // namespace ringside
