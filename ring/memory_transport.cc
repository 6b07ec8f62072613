#include "ring/memory_transport.h"

#include <string>

namespace ringside::ring {

InMemoryTransport::InMemoryTransport(RingTopology topology, RingInbox& own_inbox,
                                     RingInbox& right_inbox)
    : topology_(topology),
      own_inbox_(own_inbox),
      right_inbox_(right_inbox),
      stream_id_(right_inbox.OpenStream()) {}

void InMemoryTransport::BeginCollective(uint64_t collective) {
  own_inbox_.BeginCollective(collective);
}

absl::Status InMemoryTransport::Send(const SegmentHeader& header, absl::Span<const char> payload) {
  return right_inbox_.Accept(
      Segment{header, SegmentPayload(std::string(payload.data(), payload.size()))}, stream_id_);
}

absl::StatusOr<Segment> InMemoryTransport::Receive(uint64_t collective, absl::Time deadline) {
  return own_inbox_.Next(collective, deadline);
}

void InMemoryTransport::AbandonCollective(const absl::Status& why) {
  // Like a cancelled gRPC stream: the neighbour learns the stream ended, the next one is fresh.
  right_inbox_.StreamEnded(stream_id_);
  stream_id_ = right_inbox_.OpenStream();
}

InMemoryRing::InMemoryRing(int world, uint64_t generation, RingInboxOptions options) {
  for (int rank = 0; rank < world; ++rank) {
    inboxes_.push_back(std::make_unique<RingInbox>(RingTopology{generation, world, rank}, options,
                                                   LinkReceiveMetrics{}));
  }
  for (int rank = 0; rank < world; ++rank) {
    transports_.push_back(std::make_unique<InMemoryTransport>(
        RingTopology{generation, world, rank}, *inboxes_[rank], *inboxes_[(rank + 1) % world]));
  }
}

}  // namespace ringside::ring
