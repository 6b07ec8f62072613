// The transport the ring allreduce runs over: send to the right neighbour, receive from the left.
// Implementations: InMemoryRing (tests, threads as ranks) and GrpcRingTransport (real peers).
// The algorithm never sees a concrete transport.
//
// Thread-safety: one collective at a time per transport; the sends and Receive() are called
// from the collective's thread only.
#ifndef RINGSIDE_RING_TRANSPORT_H_
#define RINGSIDE_RING_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ring/schedule.h"
#include "ring/segment.h"

namespace ringside::ring {

class RingTransport {
 public:
  virtual ~RingTransport() = default;

  virtual const RingTopology& topology() const = 0;

  // Called before the first Send/Receive of `collective`: forgets older segments and errors.
  virtual void BeginCollective(uint64_t collective) = 0;

  // Queues one segment of `payload_bytes` for the right neighbour; `fill` writes the payload
  // straight into the message before this returns (given where it starts), so a sum meant for
  // the neighbour is computed into the message, not into a buffer copied afterwards. Segments
  // arrive in the order they are sent. An error means the link is broken for this collective.
  // (Zero-copy sends of the caller's buffer were removed: gRPC 1.51 kept the last slices of a
  // two-rank ring referenced indefinitely, so a wait for their release never ended.)
  virtual absl::Status SendFilled(const SegmentHeader& header, size_t payload_bytes,
                                  absl::FunctionRef<void(char*)> fill) = 0;

  // Queues a received payload unchanged (the allgather passes on what it received). The
  // transport may keep references to the payload's memory (through its owner) for as long as
  // the message lives; nothing is waited for, and the caller needs nothing back.
  virtual absl::Status Forward(const SegmentHeader& header, const SegmentPayload& payload) = 0;

  // SendFilled with a copy of `payload`: the caller's buffer is its own again at once.
  absl::Status Send(const SegmentHeader& header, absl::Span<const char> payload);

  // The next segment of `collective` from the left neighbour, in send order.
  virtual absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) = 0;

  // The collective failed on this rank: abandon what is in flight so the next collective starts
  // on a clean link (the gRPC transport cancels its stream, which the neighbour sees at once).
  virtual void AbandonCollective(const absl::Status& why) = 0;
};

inline absl::Status RingTransport::Send(const SegmentHeader& header,
                                        absl::Span<const char> payload) {
  return SendFilled(header, payload.size(),
                    [payload](char* out) { std::memcpy(out, payload.data(), payload.size()); });
}

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_TRANSPORT_H_
