// RingInbox: the receiving end of one worker's ring link. Every segment that arrives from the left
// neighbour (over gRPC, or directly in the in-memory transport) goes through Accept(), which
// validates it against the topology and against the exact next position in the ring schedule,
// counts it, and queues it for the allreduce, which takes segments in order with Next().
//
// Sequence rule: segments arrive in schedule order (collective, step, offset). A segment that
// starts a collective (step 0, offset 0) newer than the one in progress is accepted and abandons
// the partial one (the sender gave up on it); anything older is stale; anything else out of order
// is refused.
//
// Generations: a segment of an older generation is refused; one of a newer generation is held
// (within a byte cap of its own, apart from the current generation's queue) until SetTopology()
// reaches it, then validated as if it had just arrived. Any newer generation, not only the next:
// two membership changes in quick succession can put the neighbour two generations ahead, and
// refusing it would fail its regroup. What bounds this is the cap and, in an elastic ring, the
// stream's link key (ring/grpc_transport.h): only the controller's assigned neighbour of that
// generation gets this far. A neighbour that adopts a new generation first is thus not turned away
// while this worker finishes its step. Control segments (state hand-over) are not counted.
//
// Thread-safe. Accept() is called from gRPC reactor threads and never blocks; Next() blocks until
// a segment, an error or its deadline.
#ifndef RINGSIDE_RING_INBOX_H_
#define RINGSIDE_RING_INBOX_H_

#include <cstdint>
#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "ring/schedule.h"
#include "ring/segment.h"

namespace ringside::ring {

// What a waiting segment costs beyond its payload (its queue entry, the payload's list of pieces
// and their owner), charged with the payload against max_queued_bytes: an empty segment takes
// memory too, and a sender must not be able to pile up empty ones without bound.
inline constexpr uint64_t kQueuedSegmentOverheadBytes = 128;

struct RingInboxOptions {
  // Largest buffer (in elements) a sender may announce; larger is INVALID_ARGUMENT.
  uint64_t max_total_elements = uint64_t{1} << 32;
  // Bytes that may wait unconsumed, each segment's payload plus kQueuedSegmentOverheadBytes; a
  // sender running further ahead gets RESOURCE_EXHAUSTED.
  uint64_t max_queued_bytes = uint64_t{1} << 30;
  // Bytes of generations not reached yet that may be held (RESOURCE_EXHAUSTED beyond).
  uint64_t max_held_bytes = uint64_t{256} << 20;
};

class RingInbox {
 public:
  RingInbox(RingTopology topology, RingInboxOptions options, LinkReceiveMetrics metrics);

  // A new generation: drops queued segments, fails a waiting Next() with ABORTED, and releases
  // the held segments of that generation into the queue.
  void SetTopology(RingTopology topology, LinkReceiveMetrics metrics);

  // The controller announced `generation`: every Next() of an older one fails with ABORTED from
  // now on (even one that starts later), so a collective waiting for a lost peer ends at once.
  // Thread-safe; callable from any thread.
  void Supersede(uint64_t generation);

  // Registers a new incoming stream; the id goes to Accept() and StreamEnded().
  uint64_t OpenStream();

  // Validates and queues. On error nothing is queued, the status (INVALID_ARGUMENT,
  // FAILED_PRECONDITION or RESOURCE_EXHAUSTED, with a message naming the field) is returned for
  // the sender, and the local collective in progress is failed with it too -- unless the
  // segment is of an older generation, a former neighbour's left-over.
  absl::Status Accept(Segment segment, uint64_t stream_id);

  // The stream `stream_id` ended. If it was the latest stream and a collective is part-way
  // through, the waiting collective fails with UNAVAILABLE.
  void StreamEnded(uint64_t stream_id);

  // Starts collective `collective` locally: drops older segments and errors.
  void BeginCollective(uint64_t collective);

  // Fails the collective in progress (e.g. the send side broke).
  void Fail(const absl::Status& status);

  // The next segment of `collective` in schedule order, or the first error, or DEADLINE_EXCEEDED.
  absl::StatusOr<Segment> Next(uint64_t collective, absl::Time deadline);

  // What waits unconsumed (queued and held segments), as charged against max_queued_bytes.
  uint64_t queued_bytes() const;

 private:
  // Where the next segment from the left neighbour must be in the schedule.
  struct Position {
    bool at_collective_start = true;  // no segment of `collective` seen yet
    uint64_t collective = 0;
    int step = 0;
    uint64_t offset = 0;
    uint64_t total_elements = 0;
  };

  absl::Status Validate(const SegmentHeader& header, uint64_t payload_bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ValidateSequence(const SegmentHeader& header) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Advance(const SegmentHeader& header, uint64_t elements) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string LeftName() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status QueueFull() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // RESOURCE_EXHAUSTED
  // Validates, counts and queues a segment of the current generation.
  absl::Status AcceptCurrent(Segment segment, uint64_t stream_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RingInboxOptions options_;
  mutable absl::Mutex mu_;
  RingTopology topology_ ABSL_GUARDED_BY(mu_);
  LinkReceiveMetrics metrics_ ABSL_GUARDED_BY(mu_);
  Position expected_ ABSL_GUARDED_BY(mu_);
  std::deque<Segment> queue_ ABSL_GUARDED_BY(mu_);
  // Segments of newer generations, with their stream ids, in arrival order.
  std::deque<std::pair<Segment, uint64_t>> held_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // queue_, by QueuedCost()
  uint64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;    // held_, by QueuedCost()
  uint64_t superseded_by_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  uint64_t latest_stream_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_stream_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_INBOX_H_
