#include "common/cost_model.h"

#include "common/metrics.h"
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

BusiestNode RingBusiestNode(uint64_t elements, int world) {
  int busiest_sender = 0;
  uint64_t most = 0;
  for (int rank = 0; rank < world; ++rank) {
    const uint64_t sent = RingElementsSentByRank(elements, world, rank);
    if (sent > most) {
      most = sent;
      busiest_sender = rank;
    }
  }
  return {WorkerName(world > 1 ? (busiest_sender + 1) % world : 0), most};
}

namespace {

// The first of the largest ranges (EvenRanges puts the larger ones first, but search anyway).
int LargestShard(uint64_t elements, int shards) {
  int largest = 0;
  for (int shard = 1; shard < shards; ++shard) {
    if (PsElementsPerShardLink(elements, shards, shard) >
        PsElementsPerShardLink(elements, shards, largest)) {
      largest = shard;
    }
  }
  return largest;
}

}  // namespace

uint64_t PsLargestShardIngress(uint64_t elements, int workers, int shards) {
  if (shards < 1 || workers < 1) return 0;
  return static_cast<uint64_t>(workers) *
         PsElementsPerShardLink(elements, shards, LargestShard(elements, shards));
}

BusiestNode PsBusiestNode(uint64_t elements, int workers, int shards) {
  if (shards < 1) return {};
  const uint64_t shard_ingress = PsLargestShardIngress(elements, workers, shards);
  if (shard_ingress >= elements)
    return {PsShardName(LargestShard(elements, shards)), shard_ingress};
  return {WorkerName(0), elements};
}

}  // namespace ringside
