#include "common/randomk_codec.h"

#include <cassert>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/counter_rng.h"
#include "common/topk_codec.h"

namespace ringside {

namespace {

// Calls visit(j, coordinate) for the k coordinates of segment `key` in ascending order: the
// segment cut into k strata, the first n mod k of them one element longer, and one coordinate
// drawn uniformly in each. Every element is drawn with probability 1 / (its stratum's length),
// n / k within one; the coordinates come out distinct and in order, with one counter draw each
// and no division, bitmap or sort (Floyd's uniform k-subsets cost a bitmap's clearing and
// scanning, several times the draws themselves).
template <typename Visit>
void ForEachCoordinate(const SegmentKey& key, size_t elements, size_t k, Visit visit) {
  assert(k <= elements && elements <= std::numeric_limits<uint32_t>::max());
  if (k == 0) return;
  const uint64_t segment_seed =
      Mix64(Mix64(Mix64(key.seed) ^ static_cast<uint64_t>(key.step)) ^ key.offset);
  const uint64_t length = elements / k;
  const uint64_t longer = elements % k;  // strata [0, longer) have length + 1 elements
  uint64_t first = 0;
  for (uint64_t j = 0; j < k; ++j) {
    const uint64_t stratum = length + (j < longer ? 1 : 0);
    visit(j, static_cast<uint32_t>(
                 first + CounterBelow(segment_seed, RngStream::kRandomKCoordinates, j, stratum)));
    first += stratum;
  }
}

}  // namespace

std::vector<uint32_t> RandomKCoordinates(const SegmentKey& key, size_t elements, size_t k) {
  std::vector<uint32_t> coordinates(k);
  uint32_t* out = coordinates.data();  // unchecked (gradient_codec.h's AddInto says why)
  ForEachCoordinate(key, elements, k, [out](uint64_t j, uint32_t i) { out[j] = i; });
  return coordinates;
}

namespace {

// The randomk payload of randomk_codec.h, for SegmentCodec.
struct RandomKEncoding {
  float fraction;  // F in (0, 1]

  size_t EncodedBytes(size_t elements) const { return 4 * TopKCount(elements, fraction); }

  void Encode(const SegmentKey& key, absl::Span<float> values, char* wire) const {
    float* value = values.data();  // unchecked (gradient_codec.h's AddInto says why)
    ForEachCoordinate(key, values.size(), TopKCount(values.size(), fraction),
                      [value, wire](uint64_t j, uint32_t i) {
                        StoreF32(wire + 4 * j, value[i]);
                        value[i] = 0.0f;  // sent whole
                      });
  }

  // The add is a pass of its own: the coordinates are one element in n / k, and the rest of the
  // residual must take the gradient all the same.
  void EncodeAdded(const SegmentKey& key, absl::Span<const float> gradient,
                   absl::Span<float> residual, char* wire) const {
    AddInto(gradient, residual);
    Encode(key, residual, wire);
  }

  absl::Status Check(const SegmentKey&, absl::string_view wire, size_t elements) const {
    if (elements > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random-k segment of ", elements, " elements: more than 32-bit coordinates reach"));
    }
    if (wire.size() != EncodedBytes(elements)) {
      return absl::InvalidArgumentError(absl::StrCat("random-k payload of ", wire.size(),
                                                     " bytes; a segment of ", elements,
                                                     " elements takes ", EncodedBytes(elements)));
    }
    for (size_t j = 0; j < wire.size() / 4; ++j) {
      if (!std::isfinite(LoadF32(wire.data() + 4 * j))) {
        return absl::InvalidArgumentError(absl::StrCat("random-k value ", j, " is not finite"));
      }
    }
    return absl::OkStatus();
  }

  void AddChecked(const SegmentKey& key, absl::string_view wire, absl::Span<float> sum) const {
    const char* value = wire.data();
    float* out = sum.data();  // unchecked: Check bounded the payload, the strata the coordinates
    // The sum is seldom in cache (a shard's or a hop's buffer, one element in n/k touched): the
    // coordinates of a batch are drawn and their elements prefetched before any is added, so
    // the batch's misses overlap instead of each add waiting for its own.
    constexpr size_t kBatch = 64;
    uint32_t batch[kBatch];
    size_t filled = 0, added = 0;
    const auto add_batch = [&] {
      for (size_t b = 0; b < filled; ++b, ++added) out[batch[b]] += LoadF32(value + 4 * added);
      filled = 0;
    };
    ForEachCoordinate(key, sum.size(), wire.size() / 4, [&](uint64_t, uint32_t i) {
      __builtin_prefetch(out + i, 1);
      batch[filled++] = i;
      if (filled == kBatch) add_batch();
    });
    add_batch();
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeRandomKCodec(float fraction) {
  return std::make_unique<SegmentCodec<RandomKEncoding>>(fraction);
}

}  // namespace ringside
