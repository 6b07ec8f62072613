// The transport the ring allreduce runs over: send to the right neighbour, receive from the left.
// Implementations: InMemoryRing (tests, threads as ranks) and GrpcRingTransport (real peers).
// The algorithm never sees a concrete transport.
//
// Thread-safety: one collective at a time per transport; Send() and Receive() are called from
// the collective's thread only.
#ifndef RINGSIDE_RING_TRANSPORT_H_
#define RINGSIDE_RING_TRANSPORT_H_

#include <cstdint>

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

  // Queues one segment for the right neighbour. Segments arrive in the order they are sent. An
  // error means the link is broken for this collective. The transport copies `payload` before
  // returning: the caller's buffer is its own again at once. (Zero-copy sends, whose slices
  // pointed into the caller's buffer, were removed: gRPC 1.51 kept the last slices of a
  // two-rank ring referenced indefinitely, so the wait for their release never ended.)
  virtual absl::Status Send(const SegmentHeader& header, absl::Span<const char> payload) = 0;

  // The next segment of `collective` from the left neighbour, in send order.
  virtual absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) = 0;

  // The collective failed on this rank: abandon what is in flight so the next collective starts
  // on a clean link (the gRPC transport cancels its stream, which the neighbour sees at once).
  virtual void AbandonCollective(const absl::Status& why) = 0;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_TRANSPORT_H_
