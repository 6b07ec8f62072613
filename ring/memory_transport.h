// An in-memory ring of N ranks for tests: each rank's transport delivers straight into its right
// neighbour's RingInbox, so the same validation runs as over gRPC. Run each rank on its own
// thread. The InMemoryRing owns all inboxes and transports; it must outlive the threads using
// them. Thread-safe as RingInbox is; each transport is used by one collective thread.
#ifndef RINGSIDE_RING_MEMORY_TRANSPORT_H_
#define RINGSIDE_RING_MEMORY_TRANSPORT_H_

#include <memory>
#include <vector>

#include "ring/inbox.h"
#include "ring/transport.h"

namespace ringside::ring {

class InMemoryTransport final : public RingTransport {
 public:
  InMemoryTransport(RingTopology topology, RingInbox& own_inbox, RingInbox& right_inbox);

  const RingTopology& topology() const override { return topology_; }
  void BeginCollective(uint64_t collective) override;
  absl::Status Send(const SegmentHeader& header, absl::Span<const char> payload) override;
  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override;
  void AbandonCollective(const absl::Status& why) override;

 private:
  RingTopology topology_;
  RingInbox& own_inbox_;
  RingInbox& right_inbox_;
  uint64_t stream_id_;
};

class InMemoryRing {
 public:
  explicit InMemoryRing(int world, uint64_t generation = 0, RingInboxOptions options = {});
  RingTransport& transport(int rank) { return *transports_[rank]; }
  RingInbox& inbox(int rank) { return *inboxes_[rank]; }

 private:
  std::vector<std::unique_ptr<RingInbox>> inboxes_;
  std::vector<std::unique_ptr<InMemoryTransport>> transports_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_MEMORY_TRANSPORT_H_
