// Bandwidth-optimal ring allreduce (scatter-reduce then allgather, 2(N-1) steps; see
// schedule.h) over any RingTransport. Each chunk travels in segments of at most
// `segment_bytes`, so the reduction of one segment overlaps the arrival of the next. A buffer
// larger than kRingPieceElements (common/cost_model.h) is reduced piece after piece, each a
// collective of its own on the wire (the caller's number shifted left by 12 bits, plus the
// piece), so what the ring holds in flight is bounded by a piece whatever the buffer's size.
//
// Values travel as `wire_dtype` (common/wire_dtype.h) and are summed in float32: each
// scatter-reduce hop decodes, adds in float32 and encodes the partial sum again (rounded once
// per hop: N-1 times for the last); the rank that completes a chunk rounds its own copy to the
// wire type before the allgather forwards it unchanged, so every rank ends with the same bits.
// fp16 pre-divides the shares by N and multiplies the result back (WireShareDivisor). With a
// 16-bit wire dtype a result holding a NaN or an infinity (a NaN gradient, or beyond fp16's
// range even after the division) fails the collective with INVALID_ARGUMENT on every rank (each
// says how many its own share had): it is never summed into a model silently.
//
// Not thread-safe: one collective at a time per instance. Errors: a failed collective returns
// its cause (DEADLINE_EXCEEDED, UNAVAILABLE, INVALID_ARGUMENT, ...) prefixed with the collective
// and step; the buffer is then partly reduced and must not be used. The transport is told to
// abandon the collective so the next one starts cleanly.
#ifndef RINGSIDE_RING_ALLREDUCE_H_
#define RINGSIDE_RING_ALLREDUCE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/ranges.h"
#include "common/wire_dtype.h"
#include "ring/transport.h"

namespace ringside::ring {

enum class ReduceOp { kSum, kAverage };

// The collective piece `piece` of the caller's collective `collective` travels as (RingAllreduce
// numbers the pieces so; a peer that speaks for a rank, as tests do, must too).
uint64_t RingWireCollective(uint64_t collective, uint64_t piece = 0);

struct AllreduceOptions {
  // Largest payload of one message. Small values force many segments per chunk in tests.
  uint64_t segment_bytes = uint64_t{1} << 20;
  // The whole collective must finish within this; a dead or slow peer fails it, never hangs it.
  absl::Duration timeout = absl::Seconds(60);
  ReduceOp op = ReduceOp::kSum;
  // The element type on the wire; the buffer is float32 whatever it is. fp32: today's bits.
  WireDtype wire_dtype = WireDtype::kFp32;
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
  // One piece of the buffer and how it travels.
  struct Piece {
    uint64_t collective = 0;  // on the wire
    absl::Span<float> buffer;
    std::vector<ElementRange> chunks;  // of `buffer`, one per rank
    uint64_t segment_elements = 0;
  };
  // The buffer in its pieces (common/cost_model.h's RingPieces), one after another.
  absl::Status RunPieces(uint64_t collective, absl::Span<float> buffer,
                         const AllreduceOptions& options, absl::Time deadline);
  // `buffer` is a piece of a buffer of `whole_elements` (which sizes the segments).
  Piece PlanPiece(uint64_t collective, absl::Span<float> buffer, const AllreduceOptions& options,
                  uint64_t whole_elements) const;
  SegmentHeader HeaderOf(const Piece& piece, int step, const AllreduceOptions& options) const;
  // Step 0 of `piece`: this rank's own chunk, in segments.
  absl::Status SendFirstChunk(const Piece& piece, const AllreduceOptions& options);
  // Every step's incoming chunk of `piece`, each segment forwarded as the next step's;
  // `before_last_step` runs once the last forward is sent.
  absl::Status ReceiveSteps(const Piece& piece, const AllreduceOptions& options,
                            absl::Time deadline,
                            const std::function<absl::Status()>& before_last_step);
  // What to do with the segments of one step's incoming chunk.
  struct ChunkReceipt {
    int step = 0;
    int chunk = 0;
    bool reduce = false;                // add into the buffer (scatter-reduce) or copy (allgather)
    WireDtype wire = WireDtype::kFp32;  // how the segments' values travel
    bool scale = false;                 // kAverage: divide by the world size once final
    bool round = false;  // 16-bit wire: round this rank's final chunk to what it forwards
    // The sum stays in the buffer: this rank's final chunk, or any allgather copy. A partial
    // sum of a scatter-reduce hop is only sent on (the allgather overwrites its chunk later).
    bool keep = true;
    std::optional<SegmentHeader> forward;  // send each final segment on as this (next) step
  };

  absl::Status SendSegment(const SegmentHeader& header, uint64_t offset,
                           absl::Span<const float> values, WireDtype dtype);
  // One received segment of `receipt`'s chunk, whose elements are `values` of the buffer: read
  // (added) into them or summed into the message for the right neighbour, and forwarded.
  absl::Status ApplySegment(const ChunkReceipt& receipt, const Segment& segment,
                            absl::Span<float> values);
  // The completed chunk's scaling and rounding (ChunkReceipt::scale, round) on `values`.
  void Finish(const ChunkReceipt& receipt, absl::Span<float> values) const;
  void CountSent(size_t payload_bytes);  // one message of the link's payload counters
  // 16-bit wire: the result must be finite (see above); `own_non_finite` counts this rank's.
  absl::Status CheckFinite(uint64_t collective, absl::Span<const float> result,
                           size_t own_non_finite) const;
  absl::Status ReceiveChunk(uint64_t collective, const ChunkReceipt& receipt,
                            uint64_t total_elements, absl::Span<float> chunk, absl::Time deadline);

  RingTransport& transport_;
  LinkSendMetrics metrics_;
  LinkSendMetrics counting_;  // metrics_, or none for a control collective
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_ALLREDUCE_H_
