#include "common/topk_codec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
    const Selection selection = Select(values, k);
    // Of the elements at the threshold, the lowest indices: the candidates are in index order,
    // and every element above the threshold is one of them.
    size_t ties = k - selection.above;
    char* index_at = wire + 4;
    char* value_at = wire + 4 + 4 * k;
    for (const uint32_t i : selection.candidates) {
      const float m = Magnitude(values[i]);
      if (m > selection.threshold || (m == selection.threshold && ties > 0)) {
        if (!(m > selection.threshold)) --ties;
        StoreU32(index_at, i);
        StoreF32(value_at, values[i]);
        index_at += 4;
        value_at += 4;
        values[i] = 0.0f;  // sent whole: nothing of it is left behind
      }
    }
    assert(index_at == wire + 4 + 4 * k);
  }

  // The k-th largest magnitude of `values`, how many are above it, and (in index order) the
  // indices of every element at or above it, perhaps with some below.
  struct Selection {
    float threshold = 0;
    size_t above = 0;
    std::vector<uint32_t> candidates;
  };

  // Deep Gradient Compression's sampled threshold, made exact: the magnitude a little above the
  // k-th largest of a sample (every 1 in n/s elements) gathers, in one pass, the few elements
  // at or above it, and the k-th largest is found among them, which holds it whenever they are
  // at least k (else it is found among them all). No full sort, and for a small fraction no
  // copy of the segment: the same selection as nth_element over every magnitude, in a pass.
  static Selection Select(absl::Span<const float> values, size_t k) {
    const size_t n = values.size();
    // Enough of the sample above the estimate that the k-th largest falls below it but for a
    // rare segment: 8 of the sample expected above the k-th largest, 2 × 8 + 8 above the
    // estimate.
    const size_t sample = std::min<size_t>(n, 8 * (n / k) + 64);
    if (4 * sample < n) {
      std::vector<float> sampled(sample);
      for (size_t j = 0; j < sample; ++j) sampled[j] = Magnitude(values[j * (n / sample)]);
      const size_t rank = std::min(sample, 2 * ((sample * k + n - 1) / n) + 8);
      std::nth_element(sampled.begin(), sampled.begin() + (rank - 1), sampled.end(),
                       std::greater<float>());
      const float estimate = sampled[rank - 1];
      Selection selection;
      selection.candidates.reserve(4 * k + 64);
      Gather(values, estimate, selection.candidates);
      if (selection.candidates.size() >= k) {
        FindThreshold(values, k, selection);
        return selection;
      }
    }
    Selection every;
    every.candidates.resize(n);
    for (size_t i = 0; i < n; ++i) every.candidates[i] = static_cast<uint32_t>(i);
    FindThreshold(values, k, every);
    return every;
  }

  // Appends to `out`, in order, the index of every element whose magnitude is at least
  // `estimate` (a NaN's too, as Magnitude ranks it), compared without a branch. Where SSE2 is
  // (every x86-64), four at a time and packed without one either: a table gives each 4-bit mask
  // its set lanes' offsets in order, one four-wide store writes them and the cursor moves by
  // their count (a branch per mask mispredicts on the third or so of them that hold an index).
  static void Gather(absl::Span<const float> values, float estimate, std::vector<uint32_t>& out) {
    const size_t n = values.size();
    const float* value = values.data();  // unchecked (error_feedback.cc says why)
    size_t count = out.size();
    size_t base = 0;
#if defined(__SSE2__)
    // Not below the estimate, as cmpnlt is, NaN included.
    const __m128 limit = _mm_set1_ps(estimate);
    const __m128 magnitude_bits = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    alignas(16) uint32_t packed[16][4] = {};
    unsigned set_lanes[16] = {};  // a table too: popcount is a library call below SSE4.2
    for (unsigned mask = 0; mask < 16; ++mask) {
      for (unsigned j = 0; j < 4; ++j) {
        if ((mask >> j) & 1) packed[mask][set_lanes[mask]++] = j;
      }
    }
    for (; base + 8 <= n; base += 8) {
      if (count + 8 > out.size()) out.resize(std::max(out.size() * 2, count + 64));
      uint32_t* cursor = out.data() + count;
      for (size_t half = 0; half < 8; half += 4) {
        const __m128 magnitude = _mm_and_ps(_mm_loadu_ps(value + base + half), magnitude_bits);
        const auto mask = static_cast<unsigned>(_mm_movemask_ps(_mm_cmpnlt_ps(magnitude, limit)));
        const __m128i offsets = _mm_load_si128(reinterpret_cast<const __m128i*>(packed[mask]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cursor),
                         _mm_add_epi32(offsets, _mm_set1_epi32(static_cast<int>(base + half))));
        cursor += set_lanes[mask];
      }
      count = static_cast<size_t>(cursor - out.data());
    }
#endif
    const auto append = [&](size_t first, unsigned mask) {
      for (; mask != 0; mask &= mask - 1) {
        out.resize(count + 1);
        out[count++] = static_cast<uint32_t>(first + static_cast<size_t>(__builtin_ctz(mask)));
      }
    };
    for (; base < n; base += 8) {
      const size_t block = std::min<size_t>(8, n - base);
      unsigned mask = 0;
      for (size_t j = 0; j < block; ++j) {
        mask |= static_cast<unsigned>(!(std::fabs(value[base + j]) < estimate)) << j;
      }
      if (mask != 0) append(base, mask);
    }
    out.resize(count);
  }

  // The k-th largest magnitude among the selection's candidates (at least k, holding every
  // element at or above it) and how many are above it.
  static void FindThreshold(absl::Span<const float> values, size_t k, Selection& selection) {
    std::vector<float> magnitudes(selection.candidates.size());
    for (size_t j = 0; j < magnitudes.size(); ++j) {
      magnitudes[j] = Magnitude(values[selection.candidates[j]]);
    }
    std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1), magnitudes.end(),
                     std::greater<float>());
    selection.threshold = magnitudes[k - 1];
    selection.above =
        static_cast<size_t>(std::count_if(magnitudes.begin(), magnitudes.begin() + (k - 1),
                                          [&](float m) { return m > selection.threshold; }));
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
