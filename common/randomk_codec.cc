#include "common/randomk_codec.h"

#include <cassert>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/counter_rng.h"
#include "common/topk_codec.h"

namespace ringside {

std::vector<uint32_t> RandomKCoordinates(const SegmentKey& key, size_t elements, size_t k) {
  assert(k <= elements && elements <= std::numeric_limits<uint32_t>::max());
  const uint64_t segment_seed =
      Mix64(Mix64(Mix64(key.seed) ^ static_cast<uint64_t>(key.step)) ^ key.offset);
  // Floyd's algorithm: k draws, each a new distinct index, marked in a bitmap; reading the
  // bitmap in order gives them ascending without a sort.
  std::vector<uint64_t> chosen((elements + 63) / 64, 0);
  const auto marked = [&chosen](uint64_t i) { return (chosen[i / 64] >> (i % 64)) & 1; };
  const auto mark = [&chosen](uint64_t i) { chosen[i / 64] |= uint64_t{1} << (i % 64); };
  for (uint64_t j = elements - k; j < elements; ++j) {
    const uint64_t t = CounterBelow(segment_seed, RngStream::kRandomKCoordinates, j, j + 1);
    mark(marked(t) ? j : t);
  }
  std::vector<uint32_t> coordinates;
  coordinates.reserve(k);
  for (size_t word = 0; word < chosen.size(); ++word) {
    for (uint64_t bits = chosen[word]; bits != 0; bits &= bits - 1) {
      coordinates.push_back(static_cast<uint32_t>(64 * word + __builtin_ctzll(bits)));
    }
  }
  return coordinates;
}

namespace {

// The randomk payload of randomk_codec.h, for SegmentCodec.
struct RandomKEncoding {
  float fraction;  // F in (0, 1]

  size_t EncodedBytes(size_t elements) const { return 4 * TopKCount(elements, fraction); }

  void Encode(const SegmentKey& key, absl::Span<float> values, char* wire) const {
    const size_t k = TopKCount(values.size(), fraction);
    for (const uint32_t i : RandomKCoordinates(key, values.size(), k)) {
      StoreF32(wire, values[i]);
      wire += 4;
      values[i] = 0.0f;  // sent whole
    }
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
    for (const uint32_t i : RandomKCoordinates(key, sum.size(), wire.size() / 4)) {
      sum[i] += LoadF32(value);
      value += 4;
    }
  }
};

}  // namespace

std::unique_ptr<GradientCodec> MakeRandomKCodec(float fraction) {
  return std::make_unique<SegmentCodec<RandomKEncoding>>(fraction);
}

}  // namespace ringside
