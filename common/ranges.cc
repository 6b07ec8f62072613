#include "common/ranges.h"

#include <cassert>

namespace ringside {

std::vector<ElementRange> EvenRanges(uint64_t count, int parts) {
  assert(parts >= 1);
  std::vector<ElementRange> ranges(parts);
  const uint64_t base = count / parts;
  const uint64_t larger = count % parts;
  uint64_t begin = 0;
  for (int i = 0; i < parts; ++i) {
    const uint64_t size = base + (static_cast<uint64_t>(i) < larger ? 1 : 0);
    ranges[i] = {begin, begin + size};
    begin += size;
  }
  return ranges;
}

}  // namespace ringside
