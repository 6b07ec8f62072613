#include "common/cost_model.h"

#include "common/metrics.h"
#include "common/ranges.h"

namespace ringside {

uint64_t RingElementsSentByRank(uint64_t elements, int world, int rank) {
  if (world <= 1) return 0;
  const auto chunks = EvenRanges(elements, world);
  return 2 * elements - chunks[(rank + 1) % world].size() - chunks[(rank + 2) % world].size();
}

uint64_t RingElementsSentByRank(absl::Span<const uint64_t> buckets, int world, int rank) {
  uint64_t sent = 0;
  for (uint64_t elements : buckets) sent += RingElementsSentByRank(elements, world, rank);
  return sent;
}

uint64_t PsElementsPerShardLink(uint64_t elements, int shards, int shard) {
  return EvenRanges(elements, shards)[shard].size();
}

uint64_t RingBytesSentByRank(uint64_t elements, int world, int rank, WireDtype dtype) {
  return RingElementsSentByRank(elements, world, rank) * WireBytesPerElement(dtype);
}

uint64_t PsBytesPerShardLink(uint64_t elements, int shards, int shard, WireDtype dtype) {
  return PsElementsPerShardLink(elements, shards, shard) * WireBytesPerElement(dtype);
}

BusiestNode RingBusiestNode(uint64_t elements, int world) {
  return RingBusiestNode(absl::MakeConstSpan(&elements, 1), world);
}

BusiestNode RingBusiestNode(absl::Span<const uint64_t> buckets, int world) {
  int busiest_sender = 0;
  uint64_t most = 0;
  for (int rank = 0; rank < world; ++rank) {
    const uint64_t sent = RingElementsSentByRank(buckets, world, rank);
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

uint64_t BusiestLinkElements(SyncMode mode, uint64_t elements, int workers, int shards) {
  if (workers < 1) return 0;
  if (mode == SyncMode::kRing) return RingBusiestNode(elements, workers).elements;
  if (shards < 1) return 0;
  // PsBusiestNode already takes the larger of the fullest shard's ingress and a worker's K; a
  // shard's egress equals its ingress, so that is the busiest direction of any link.
  return PsBusiestNode(elements, workers, shards).elements;
}

double SyncBoundSeconds(SyncMode mode, uint64_t elements, int workers, int shards,
                        int element_bytes, double bytes_per_second) {
  if (bytes_per_second <= 0) return 0;
  return static_cast<double>(BusiestLinkElements(mode, elements, workers, shards)) * element_bytes /
         bytes_per_second;
}

}  // namespace ringside
