// The ring allreduce schedule (Baidu / Horovod): N-1 scatter-reduce steps then N-1 allgather
// steps. At scatter-reduce step s, rank r sends chunk (r - s) and receives chunk (r - s - 1),
// adding it into its own; after them rank r owns the fully reduced chunk (r + 1). At allgather
// step s it sends chunk (r + 1 - s) and receives chunk (r - s), overwriting its own copy.
// Pure value types; thread-safe.
#ifndef RINGSIDE_RING_SCHEDULE_H_
#define RINGSIDE_RING_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/ranges.h"

namespace ringside::ring {

// Who is where in the ring for one generation. Rank r sends to (r + 1) mod N and receives from
// (r - 1) mod N.
struct RingTopology {
  uint64_t generation = 0;
  int world = 1;
  int rank = 0;
  int left() const { return (rank + world - 1) % world; }
  int right() const { return (rank + 1) % world; }
};

// INVALID_ARGUMENT unless 1 <= world and 0 <= rank < world.
absl::Status ValidateTopology(const RingTopology& topology);

// ValidateTopology, and `addresses` names every rank (addresses[r] is rank r's RingPeer).
absl::Status ValidateRing(const RingTopology& topology, const std::vector<std::string>& addresses);

struct RingStep {
  int send_chunk = 0;
  int receive_chunk = 0;
  bool reduce = false;  // true: add the received chunk into ours; false: overwrite ours
};

class RingSchedule {
 public:
  RingSchedule(int world, int rank) : world_(world), rank_(rank) {}
  int steps() const { return 2 * (world_ - 1); }
  // The chunk fully reduced on this rank after scatter-reduce.
  int owned_chunk() const { return (rank_ + 1) % world_; }
  // Requires 0 <= step < steps().
  RingStep Step(int step) const;

 private:
  int Mod(int value) const { return ((value % world_) + world_) % world_; }
  int world_;
  int rank_;
};

// Chunk c of a buffer of `elements` elements in a ring of `world`.
inline std::vector<ElementRange> ChunkRanges(uint64_t elements, int world) {
  return EvenRanges(elements, world);
}

// Segments a chunk of `chunk_elements` is cut into when each carries at most
// `segment_elements` (>= 1). An empty chunk still travels as one empty segment, so every step
// has at least one message and the receiver's expected sequence never stalls.
inline uint64_t SegmentsInChunk(uint64_t chunk_elements, uint64_t segment_elements) {
  if (chunk_elements == 0) return 1;
  return (chunk_elements + segment_elements - 1) / segment_elements;
}

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_SCHEDULE_H_
