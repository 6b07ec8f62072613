#include "common/cost_model.h"

#include "common/ranges.h"

namespace ringside {

uint64_t RingElementsSentByRank(uint64_t elements, int world, int rank) {
  if (world <= 1) return 0;
  const auto chunks = EvenRanges(elements, world);
  return 2 * elements - chunks[(rank + 1) % world].size() - chunks[(rank + 2) % world].size();
}

uint64_t PsElementsPerShardLink(uint64_t elements, int shards, int shard) {
  return EvenRanges(elements, shards)[shard].size();
}

}  // namespace ringside
