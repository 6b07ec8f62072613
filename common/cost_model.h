// The analytic communication cost model that `ringside_link_expected_bytes_total` follows
// (docs/contract.md, "Analytic cost model"). Pure functions; thread-safe.
//
// Ring (scatter-reduce then allgather over chunks c_0..c_{N-1} of K elements): at scatter-reduce
// step s rank r sends chunk (r - s) mod N, at allgather step s it sends chunk (r + 1 - s) mod N.
// So rank r sends every chunk but (r + 1) in the first phase and every chunk but (r + 2) in the
// second: 2K - |c_{r+1}| - |c_{r+2}| elements, which is 2(N-1)K/N when N divides K.
//
// A buffer of more than kRingPieceElements elements is reduced as consecutive allreduces of
// pieces (RingPieces), each with its own chunks: a rank sends a piece's chunks as above, so the
// total is the pieces' sum (2(N-1)K/N when N divides every piece).
//
// Parameter server (S shards over contiguous ranges): worker -> shard s carries |range s|
// elements of gradient, shard s -> worker the same number of parameters.
#ifndef RINGSIDE_COMMON_COST_MODEL_H_
#define RINGSIDE_COMMON_COST_MODEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/gradient_codec.h"
#include "common/metrics.h"
#include "common/ranges.h"
#include "common/wire_dtype.h"

namespace ringside {

// The largest piece one ring allreduce reduces at a time. A ring holds at most one piece in flight
// across all its links (each rank runs at most its own chunk of it ahead of what it received), so
// what a slow rank's neighbours queue for it is bounded by a piece, not by the buffer: 8 MiB of
// float32 (a 32 MiB buffer in one piece had a ring worker hold 25-45 MB of segments).
inline constexpr uint64_t kRingPieceElements = uint64_t{2} << 20;
// The pieces of an allreduce of `elements` elements: as few as fit kRingPieceElements, of even
// sizes (EvenRanges); one (possibly empty) when it fits.
std::vector<ElementRange> RingPieces(uint64_t elements);

// Elements rank `rank` of `world` sends to its right neighbour in one ring allreduce of
// `elements` elements (in its RingPieces). 0 when world == 1.
uint64_t RingElementsSentByRank(uint64_t elements, int world, int rank);
// The same for a step whose gradient is allreduced in buckets (--bucket_bytes): one allreduce of
// each bucket's `buckets[b]` elements, so the chunks are each bucket's own.
uint64_t RingElementsSentByRank(absl::Span<const uint64_t> buckets, int world, int rank);

// Elements worker -> shard `shard` (and back) carry per step with `shards` shards.
uint64_t PsElementsPerShardLink(uint64_t elements, int shards, int shard);

// The same links in bytes, for gradients travelling as `dtype` (--wire_dtype): every element
// takes WireBytesPerElement(dtype) bytes, so fp16 and bf16 halve every link's payload exactly.
uint64_t RingBytesSentByRank(uint64_t elements, int world, int rank, WireDtype dtype);
uint64_t PsBytesPerShardLink(uint64_t elements, int shards, int shard, WireDtype dtype);

// Compressed links (--compression, common/compression.h): a codec sends a segment of n elements
// in codec.EncodedBytes(n) bytes, a pure function of n (top-k's count and sign's scale are per
// segment), so a link carries the sum over the segments it sends: `segment_elements`, their
// lengths.
uint64_t CompressedLinkBytes(const GradientCodec& codec,
                             absl::Span<const uint64_t> segment_elements);
// `elements` cut front to back into segments of `segment_elements` (> 0), the last one shorter:
// how a stream cuts what it sends. Empty for 0 elements.
std::vector<uint64_t> SegmentLengths(uint64_t elements, uint64_t segment_elements);

// The node with the most payload arriving per step: the one prediction the compare table, the
// HTML report and `ringside-bench ps` quote.
struct BusiestNode {
  std::string name;       // node name per docs/contract.md ("worker-1", "ps-0")
  uint64_t elements = 0;  // payload elements arriving at it per step
};

// Ring: worker r+1 receives what worker r sends (about 2(N-1)K/N elements; chunk sizes differ
// by one element when N does not divide K, so the largest sender is searched). world <= 1:
// worker-0 with nothing.
BusiestNode RingBusiestNode(uint64_t elements, int world);
// The same for a step allreduced in buckets (as RingElementsSentByRank's).
BusiestNode RingBusiestNode(absl::Span<const uint64_t> buckets, int world);

// Parameter server: shard s receives N·|range s| elements, a worker receives K (its parameters
// back), so the busiest is the fullest shard once N·|largest range| >= K, else worker-0.
// shards < 1: an empty name and nothing.
BusiestNode PsBusiestNode(uint64_t elements, int workers, int shards);

// N·|largest range|: what the fullest shard receives per step.
uint64_t PsLargestShardIngress(uint64_t elements, int workers, int shards);

// The bandwidth bound of one step's sync when every node's egress and its ingress are each
// limited to the same rate (full duplex, as `ringside lab` shapes them): no step can move its
// payload faster than the busiest direction of the busiest node allows.
// - ring: the largest RingElementsSentByRank, about 2(N-1)K/N (a rank sends it on its egress,
//   its right neighbour receives it on its ingress);
// - ps: the largest of a shard's ingress N·|largest range| (its egress carries the same back)
//   and a worker's K (sent, and received back); with one worker, K.
// Elements in one direction of that node's link per step; 0 with no workers (or no shards, ps).
uint64_t BusiestLinkElements(SyncMode mode, uint64_t elements, int workers, int shards);

// BusiestLinkElements · `element_bytes` (WireBytesPerElement of the job's wire dtype) ÷
// `bytes_per_second`: the cost model's sync time per step at that rate (`bound_seconds_per_step`).
// 0 when the rate is not positive.
double SyncBoundSeconds(SyncMode mode, uint64_t elements, int workers, int shards,
                        int element_bytes, double bytes_per_second);

// Where a parameter server's shards run: on hosts of their own, or shard i beside worker i on
// worker i's host (`--colocate`, S = N), where the traffic between the two never crosses the
// host's link.
enum class PsPlacement { kSeparate, kColocated };

// Colocated shards (S = N): what host h (worker h and shard h) sends over its link per step, and
// receives (the same): worker h's pushes to the N-1 other shards, K - |range h|, and shard h's
// replies to the N-1 other workers, (N-1)·|range h|: 2(N-1)K/N when N divides K, the ring's.
uint64_t ColocatedPsHostElements(uint64_t elements, int workers, int host);

// One node's link in one mode: the payload elements its busier direction carries per step. A
// node is a host of the lab: "worker-i", "ps-s"; with colocated shards "worker-i" holds ps-i too.
struct NodeLinkLoad {
  std::string node;
  uint64_t elements = 0;
};

// Every node's load, workers first in rank order, then shards in shard order:
// - ring: worker r sends RingElementsSentByRank(r) and receives what r-1 sends;
// - ps, separate: a worker sends K and receives K; shard s receives N·|range s| and sends as much;
// - ps, colocated (needs S = N, else treated as separate): host h, ColocatedPsHostElements.
// Empty with no workers (or, ps, no shards).
std::vector<NodeLinkLoad> NodeLinkLoads(SyncMode mode, PsPlacement placement, uint64_t elements,
                                        int workers, int shards);

// What one step's sync must wait for when every node's link has its own rate (each way, full
// duplex): the node whose busier direction takes longest to drain at its rate. In a ring every
// step of the pipeline waits for its slowest link, so that is the slowest worker; in a PS the
// largest of every worker's K and every shard's N·K/S, each at its own rate.
struct SyncBottleneck {
  std::string node;             // empty: nothing moves (or no positive rate)
  uint64_t bytes = 0;           // in the busier direction of its link per step
  double bytes_per_second = 0;  // its link's rate
  double seconds = 0;           // bytes ÷ rate: the cost model's sync time per step
};
// `rate_of(node)`: bytes/s of that node's link; nodes at a rate <= 0 are left out.
SyncBottleneck FindSyncBottleneck(const std::vector<NodeLinkLoad>& loads, int element_bytes,
                                  const std::function<double(const std::string&)>& rate_of);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_COST_MODEL_H_
