// Bandwidth-optimal ring allreduce (scatter-reduce then allgather, 2(N-1) steps; see
// schedule.h) over any RingTransport. Each chunk travels in segments of at most
// `segment_bytes`, so the reduction of one segment overlaps the arrival of the next.
//
// Not thread-safe: one collective at a time per instance. Errors: a failed collective returns
// its cause (DEADLINE_EXCEEDED, UNAVAILABLE, INVALID_ARGUMENT, ...) prefixed with the collective
// and step; the buffer is then partly reduced and must not be used. The transport is told to
// abandon the collective so the next one starts cleanly.
#ifndef RINGSIDE_RING_ALLREDUCE_H_
#define RINGSIDE_RING_ALLREDUCE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "ring/transport.h"

namespace ringside::ring {

enum class ReduceOp { kSum, kAverage };

struct AllreduceOptions {
  // Largest payload of one message. Small values force many segments per chunk in tests.
  uint64_t segment_bytes = uint64_t{1} << 20;
  // The whole collective must finish within this; a dead or slow peer fails it, never hangs it.
  absl::Duration timeout = absl::Seconds(60);
  ReduceOp op = ReduceOp::kSum;
  // A state hand-over, not a training step: sent marked as control and not counted in the link
  // payload counters (proto/ring.proto).
  bool control = false;
};

class RingAllreduce {
 public:
  // `transport` must outlive this object. `metrics` is the sender side of the link to the right
  // neighbour (bytes, messages, expected bytes); null members are not counted.
  RingAllreduce(RingTransport& transport, LinkSendMetrics metrics)
      : transport_(transport), metrics_(metrics) {}

  // Reduces `buffer` in place across the ring. `collective` numbers the collective; every rank
  // uses the same number for the same collective, increasing over time.
  absl::Status Run(uint64_t collective, absl::Span<float> buffer, const AllreduceOptions& options);

 private:
  absl::Status RunSteps(uint64_t collective, absl::Span<float> buffer,
                        const AllreduceOptions& options, absl::Time deadline);
  // What to do with the segments of one step's incoming chunk.
  struct ChunkReceipt {
    int step = 0;
    int chunk = 0;
    bool reduce = false;  // add into the buffer (scatter-reduce) or copy (allgather)
    bool scale = false;   // kAverage: divide by the world size once final
    std::optional<SegmentHeader> forward;  // send each final segment on as this (next) step
  };

  absl::Status SendSegment(const SegmentHeader& header, uint64_t offset,
                           absl::Span<const float> values);
  absl::Status ReceiveChunk(uint64_t collective, const ChunkReceipt& receipt,
                            uint64_t total_elements, absl::Span<float> chunk, absl::Time deadline);

  RingTransport& transport_;
  LinkSendMetrics metrics_;
  LinkSendMetrics counting_;  // metrics_, or none for a control collective
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_ALLREDUCE_H_
