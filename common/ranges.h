// Splitting a flat buffer of elements into contiguous parts: ring chunks and PS shard ranges.
// Pure functions (the cost model, the ring schedule and the shard map all use them). Thread-safe.
#ifndef RINGSIDE_COMMON_RANGES_H_
#define RINGSIDE_COMMON_RANGES_H_

#include <cstdint>
#include <vector>

namespace ringside {

// Half-open element range [begin, end).
struct ElementRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool operator==(const ElementRange& other) const {
    return begin == other.begin && end == other.end;
  }
};

// `count` elements into `parts` contiguous ranges whose sizes differ by at most one; the first
// count % parts ranges are the larger ones. Requires parts >= 1.
std::vector<ElementRange> EvenRanges(uint64_t count, int parts);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_RANGES_H_
