#include "common/topk_codec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

// The order the selection ranks by: magnitude, as the bits of |value|, which order non-negative
// floats as their values do and compare without a branch or a float's unordered case. Encode's
// input is finite; a NaN still ranks (highest, above infinity), so a broken caller cannot break
// the selection's ordering.
uint32_t MagnitudeKey(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits & 0x7fffffffu;
}

// A key chosen by its rank, and how many keys are above it.
struct RankedKey {
  uint32_t key = 0;
  size_t above = 0;
};

// The rank-th largest of `keys` (1 <= rank <= keys.size()) and how many keys are above it, by
// radix selection: the keys' range [low, high] cut into 256 buckets by the top eight bits of
// key − low, counted, the bucket holding the rank-th largest kept and cut again, down to one
// value (at most four rounds, each over fewer keys). Counting and keeping are without a branch
// per key; nth_element's comparisons, past prediction on these keys, cost several times more.
// `keys` is reordered (its kept keys first).
RankedKey RankthLargest(std::vector<uint32_t>& keys, size_t rank) {
  assert(rank >= 1 && rank <= keys.size());
  uint32_t* key = keys.data();  // unchecked (gradient_codec.h's AddInto says why)
  size_t remaining = keys.size();
  uint32_t low = key[0], high = key[0];
  for (size_t j = 1; j < remaining; ++j) {
    low = std::min(low, key[j]);
    high = std::max(high, key[j]);
  }
  RankedKey ranked;
  uint32_t span = high - low;  // the remaining keys lie in [low, low + span]
  while (span > 0) {
    const int shift = std::max(0, 32 - __builtin_clz(span) - 8);
    size_t count[256] = {};
    for (size_t j = 0; j < remaining; ++j) ++count[(key[j] - low) >> shift];
    uint32_t bucket = span >> shift;
    while (count[bucket] < rank) {  // the buckets above hold fewer than rank keys
      rank -= count[bucket];
      ranked.above += count[bucket];
      --bucket;
    }
    size_t kept = 0;
    for (size_t j = 0; j < remaining; ++j) {
      const uint32_t candidate = key[j];
      key[kept] = candidate;
      kept += static_cast<size_t>(((candidate - low) >> shift) == bucket);
    }
    remaining = kept;
    low += bucket << shift;
    span = std::min(span - (bucket << shift), (uint32_t{1} << shift) - 1);
  }
  ranked.key = low;
  return ranked;
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

// The sample is μ·n/k elements (and 64), μ (how many of it are expected above the k-th largest)
// chosen to least cost the selection: the sample's strided loads against the candidates its
// estimate gathers, ~(μ + 4√μ + 4)/μ · k of them, each stored, loaded back by index and
// written. s + k(1 + 4/√μ + 4/μ) is least near μ = (2k²/n)^(2/3): 6 at F = 0.01 of 65536
// elements, 24 at F = 0.03; at least 2, so the rank stays clear of the sample's few largest.
size_t TopKSampleSize(size_t elements, size_t k) {
  const double per_sample = static_cast<double>(elements) / static_cast<double>(k);  // n/k
  const double mean = std::clamp(std::cbrt(std::pow(2.0 * k / per_sample, 2.0)), 2.0, 64.0);
  return std::min<size_t>(elements, static_cast<size_t>(mean * per_sample) + 64);
}

namespace {

// The topk payload of topk_codec.h, for SegmentCodec.
struct TopKEncoding {
  float fraction;  // F in (0, 1]

  size_t EncodedBytes(size_t elements) const { return 4 + 8 * TopKCount(elements, fraction); }

  // The k-th largest magnitude of `values`, how many are above it, and (in index order) the
  // indices of every element at or above it, perhaps with some below.
  struct Selection {
    uint32_t threshold = 0;  // a MagnitudeKey
    size_t above = 0;
    std::vector<uint32_t> candidates;
  };

  void Encode(const SegmentKey&, absl::Span<float> values, char* wire) const {
    AddAndSend(absl::Span<const float>(), values, wire);
  }

  // The add folded into the gather, the one pass over every element (the sample is read twice).
  void EncodeAdded(const SegmentKey&, absl::Span<const float> gradient, absl::Span<float> residual,
                   char* wire) const {
    AddAndSend(gradient, residual, wire);
  }

  // `gradient` (empty: nothing) added into `values`, whose k largest magnitudes go into `wire`.
  void AddAndSend(absl::Span<const float> gradient, absl::Span<float> values, char* wire) const {
    const size_t n = values.size();
    assert(n <= std::numeric_limits<uint32_t>::max());
    assert(gradient.empty() || gradient.size() == n);
    const size_t k = TopKCount(n, fraction);
    StoreU32(wire, static_cast<uint32_t>(k));
    if (k == 0) return;  // an empty segment
    const Selection selection = AddAndSelect(gradient, values, k);
    Write(selection, k, values, wire + 4);
  }

  // The selection's k elements, in index order, into `out` (k indices, then their k values),
  // each left 0 in `values`: sent whole, nothing of it is left behind. Of the elements at the
  // threshold, the lowest indices: the candidates are in index order, and every element above
  // the threshold is one of them. Without a branch per candidate (a third or so of them are
  // taken, past prediction): each is written at the cursor, which moves on only past one taken,
  // so a slot's last writer is the one taken there; the loop ends at the k-th.
  static void Write(const Selection& selection, size_t k, absl::Span<float> values, char* out) {
    float* value = values.data();  // unchecked (gradient_codec.h's AddInto says why)
    size_t taken = 0;
    size_t ties = k - selection.above;
    for (const uint32_t i : selection.candidates) {
      const float v = value[i];
      const uint32_t m = MagnitudeKey(v);
      const bool tie = m == selection.threshold;
      const bool take = (m > selection.threshold) | (tie & (ties != 0));
      ties -= static_cast<size_t>(tie & take);
      StoreU32(out + 4 * taken, i);
      StoreF32(out + 4 * (k + taken), v);
      value[i] = take ? 0.0f : v;
      taken += static_cast<size_t>(take);
      if (taken == k) break;
    }
    assert(taken == k);
  }

  // `gradient` (empty: nothing) added into `values`, and their selection: Deep Gradient
  // Compression's sampled threshold, made exact. The magnitude a little above the k-th largest
  // of a sample (every 1 in n/s elements, their sums computed as the add will store them)
  // gathers, in the one pass that also adds, the few elements at or above it, and the k-th
  // largest is found among them, which holds it whenever they are at least k (else it is found
  // among them all). No full sort, and for a small fraction no copy of the segment: the same
  // selection as nth_element over every magnitude.
  static Selection AddAndSelect(absl::Span<const float> gradient, absl::Span<float> values,
                                size_t k) {
    const size_t n = values.size();
    const bool adding = !gradient.empty();
    const size_t sample = TopKSampleSize(n, k);
    if (4 * sample < n) {
      const size_t stride = n / sample;
      std::vector<uint32_t> sampled(sample);
      for (size_t j = 0; j < sample; ++j) {
        sampled[j] =
            MagnitudeKey(adding ? values[j * stride] + gradient[j * stride] : values[j * stride]);
      }
      // The sample's count above the k-th largest is binomial with mean μ: its (μ + 4√μ + 4)-th
      // largest is at or below the k-th largest but for about one segment in a million (which
      // falls back).
      const double mean = static_cast<double>(sample) * static_cast<double>(k) / n;
      const size_t rank =
          std::min(sample, static_cast<size_t>(std::ceil(mean + 4 * std::sqrt(mean) + 4)));
      const uint32_t estimate = RankthLargest(sampled, rank).key;
      Selection selection;
      selection.candidates.reserve(4 * k + 64);
      if (adding) {
        Gather<true>(gradient.data(), values, estimate, selection.candidates);
      } else {
        Gather<false>(nullptr, values, estimate, selection.candidates);
      }
      if (selection.candidates.size() >= k) {
        FindThreshold(values, k, selection);
        return selection;
      }
    } else if (adding) {
      AddInto(gradient, values);
    }
    Selection every;
    every.candidates.resize(n);
    for (size_t i = 0; i < n; ++i) every.candidates[i] = static_cast<uint32_t>(i);
    FindThreshold(values, k, every);
    return every;
  }

  // Appends to `out`, in order, the index of every element whose MagnitudeKey is at least
  // `estimate`, compared without a branch; with kAdding, gradient[i] is added into values[i]
  // first, in the same pass. Where SSE2 is (every x86-64), four at a time and packed without a
  // branch either: a table gives each 4-bit mask its set lanes' offsets in order, one four-wide
  // store writes them and the cursor moves by their count (a branch per mask mispredicts on the
  // third or so of them that hold an index).
  template <bool kAdding>
  static void Gather(const float* gradient, absl::Span<float> values, uint32_t estimate,
                     std::vector<uint32_t>& out) {
    const size_t n = values.size();
    float* value = values.data();  // unchecked (gradient_codec.h's AddInto says why)
    size_t count = out.size();
    // The vector's size and data in locals: the stores through the cursor could alias its own
    // fields, which the compiler would reload after every one.
    size_t capacity = out.size();
    uint32_t* data = out.data();
    size_t base = 0;
#if defined(__SSE2__)
    // Keys are below 2^31, so a signed compare orders them: key > estimate − 1 (−1 for 0).
    const __m128i limit = _mm_set1_epi32(static_cast<int>(estimate) - 1);
    const __m128i magnitude_bits = _mm_set1_epi32(0x7fffffff);
    alignas(16) uint32_t packed[16][4] = {};
    unsigned set_lanes[16] = {};  // a table too: popcount is a library call below SSE4.2
    for (unsigned mask = 0; mask < 16; ++mask) {
      for (unsigned j = 0; j < 4; ++j) {
        if ((mask >> j) & 1) packed[mask][set_lanes[mask]++] = j;
      }
    }
    for (; base + 8 <= n; base += 8) {
      if (count + 8 > capacity) {
        out.resize(std::max(capacity * 2, count + 64));
        capacity = out.size();
        data = out.data();
      }
      uint32_t* cursor = data + count;
      for (size_t half = 0; half < 8; half += 4) {
        __m128 four = _mm_loadu_ps(value + base + half);
        if (kAdding) {
          four = _mm_add_ps(four, _mm_loadu_ps(gradient + base + half));
          _mm_storeu_ps(value + base + half, four);
        }
        const __m128i key = _mm_and_si128(_mm_castps_si128(four), magnitude_bits);
        const auto mask =
            static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(key, limit))));
        const __m128i offsets = _mm_load_si128(reinterpret_cast<const __m128i*>(packed[mask]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cursor),
                         _mm_add_epi32(offsets, _mm_set1_epi32(static_cast<int>(base + half))));
        cursor += set_lanes[mask];
      }
      count = static_cast<size_t>(cursor - data);
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
        if (kAdding) value[base + j] += gradient[base + j];
        mask |= static_cast<unsigned>(MagnitudeKey(value[base + j]) >= estimate) << j;
      }
      if (mask != 0) append(base, mask);
    }
    out.resize(count);
  }

  // The k-th largest magnitude among the selection's candidates (at least k, holding every
  // element at or above it) and how many are above it.
  static void FindThreshold(absl::Span<const float> values, size_t k, Selection& selection) {
    std::vector<uint32_t> keys(selection.candidates.size());
    for (size_t j = 0; j < keys.size(); ++j) {
      keys[j] = MagnitudeKey(values[selection.candidates[j]]);
    }
    const RankedKey ranked = RankthLargest(keys, k);
    selection.threshold = ranked.key;
    selection.above = ranked.above;
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
