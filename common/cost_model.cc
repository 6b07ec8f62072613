#include "common/cost_model.h"

#include <algorithm>
#include <cassert>

#include "common/metrics.h"
#include "common/ranges.h"

namespace ringside {

std::vector<ElementRange> RingPieces(uint64_t elements) {
  const uint64_t pieces =
      std::max<uint64_t>(1, (elements + kRingPieceElements - 1) / kRingPieceElements);
  return EvenRanges(elements, static_cast<int>(pieces));
}

uint64_t RingElementsSentByRank(uint64_t elements, int world, int rank) {
  if (world <= 1) return 0;
  uint64_t sent = 0;
  for (const ElementRange& piece : RingPieces(elements)) {
    const auto chunks = EvenRanges(piece.size(), world);
    sent +=
        2 * piece.size() - chunks[(rank + 1) % world].size() - chunks[(rank + 2) % world].size();
  }
  return sent;
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
  uint64_t most = 0;
  for (const NodeLinkLoad& load :
       NodeLinkLoads(mode, PsPlacement::kSeparate, elements, workers, shards)) {
    most = std::max(most, load.elements);
  }
  return most;
}

double SyncBoundSeconds(SyncMode mode, uint64_t elements, int workers, int shards,
                        int element_bytes, double bytes_per_second) {
  if (bytes_per_second <= 0) return 0;
  return static_cast<double>(BusiestLinkElements(mode, elements, workers, shards)) * element_bytes /
         bytes_per_second;
}

uint64_t ColocatedPsHostElements(uint64_t elements, int workers, int host) {
  if (workers <= 1) return 0;  // one host: every byte stays on it
  const uint64_t own = PsElementsPerShardLink(elements, workers, host);
  return elements - own + static_cast<uint64_t>(workers - 1) * own;
}

std::vector<NodeLinkLoad> NodeLinkLoads(SyncMode mode, PsPlacement placement, uint64_t elements,
                                        int workers, int shards) {
  std::vector<NodeLinkLoad> loads;
  if (workers < 1 || (mode == SyncMode::kPs && shards < 1)) return loads;
  const bool colocated = placement == PsPlacement::kColocated && shards == workers;
  for (int r = 0; r < workers; ++r) {
    uint64_t load = elements;  // ps: a worker's K each way
    if (mode == SyncMode::kRing) {
      load = std::max(RingElementsSentByRank(elements, workers, r),
                      RingElementsSentByRank(elements, workers, (r + workers - 1) % workers));
    } else if (colocated) {
      load = ColocatedPsHostElements(elements, workers, r);
    }
    loads.push_back({WorkerName(r), load});
  }
  if (mode == SyncMode::kRing || colocated) return loads;
  for (int s = 0; s < shards; ++s) {
    loads.push_back({PsShardName(s),
                     static_cast<uint64_t>(workers) * PsElementsPerShardLink(elements, shards, s)});
  }
  return loads;
}

SyncBottleneck FindSyncBottleneck(const std::vector<NodeLinkLoad>& loads, int element_bytes,
                                  const std::function<double(const std::string&)>& rate_of) {
  SyncBottleneck slowest;
  for (const NodeLinkLoad& load : loads) {
    const double rate = rate_of(load.node);
    if (rate <= 0 || load.elements == 0) continue;
    const uint64_t bytes = load.elements * static_cast<uint64_t>(element_bytes);
    const double seconds = static_cast<double>(bytes) / rate;
    if (slowest.node.empty() || seconds > slowest.seconds)
      slowest = {load.node, bytes, rate, seconds};
  }
  return slowest;
}

uint64_t CompressedLinkBytes(const GradientCodec& codec,
                             absl::Span<const uint64_t> segment_elements) {
  uint64_t bytes = 0;
  for (const uint64_t n : segment_elements) bytes += codec.EncodedBytes(n);
  return bytes;
}

std::vector<uint64_t> SegmentLengths(uint64_t elements, uint64_t segment_elements) {
  assert(segment_elements > 0);
  std::vector<uint64_t> lengths;
  for (uint64_t at = 0; at < elements; at += segment_elements) {
    lengths.push_back(std::min(segment_elements, elements - at));
  }
  return lengths;
}

}  // namespace ringside
