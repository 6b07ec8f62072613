#include "ring/memory_transport.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::ring {
namespace {

// What a sender's `fill` writes, in a string the segment owns.
SegmentPayload FilledPayload(size_t payload_bytes, absl::FunctionRef<void(char*)> fill) {
  std::string bytes(payload_bytes, '\0');
  if (payload_bytes > 0) fill(bytes.data());
  return SegmentPayload(std::move(bytes));
}

}  // namespace

InMemoryTransport::InMemoryTransport(RingTopology topology, RingInbox& own_inbox,
                                     RingInbox& right_inbox)
    : topology_(topology),
      own_inbox_(own_inbox),
      right_inbox_(right_inbox),
      stream_id_(right_inbox.OpenStream()) {}

void InMemoryTransport::BeginCollective(uint64_t collective) {
  own_inbox_.BeginCollective(collective);
}

absl::Status InMemoryTransport::SendFilled(const SegmentHeader& header, size_t payload_bytes,
                                           absl::FunctionRef<void(char*)> fill) {
  return right_inbox_.Accept(Segment{header, FilledPayload(payload_bytes, fill)}, stream_id_);
}

absl::Status InMemoryTransport::Forward(const SegmentHeader& header,
                                        const SegmentPayload& payload) {
  // The same memory, shared: as over gRPC, forwarding copies nothing.
  return right_inbox_.Accept(Segment{header, payload}, stream_id_);
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

// The link to the right neighbour of one generation: a stream into its inbox while it lives.
class InMemoryRingMember::Link final : public RingTransport {
 public:
  Link(RingTopology topology, RingInbox& own_inbox, InMemoryRingNetwork& network,
       std::string right_address)
      : topology_(topology),
        own_inbox_(own_inbox),
        network_(network),
        right_address_(std::move(right_address)) {
    if (InMemoryRingMember* right = network_.Find(right_address_)) {
      stream_id_ = right->inbox_.OpenStream();
    }
  }
  ~Link() override { EndStream(); }

  const RingTopology& topology() const override { return topology_; }
  void BeginCollective(uint64_t collective) override { own_inbox_.BeginCollective(collective); }

  absl::Status SendFilled(const SegmentHeader& header, size_t payload_bytes,
                          absl::FunctionRef<void(char*)> fill) override {
    return Deliver(Segment{header, FilledPayload(payload_bytes, fill)});
  }

  absl::Status Forward(const SegmentHeader& header, const SegmentPayload& payload) override {
    return Deliver(Segment{header, payload});
  }

  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override {
    return own_inbox_.Next(collective, deadline);
  }

  void AbandonCollective(const absl::Status& why) override {
    EndStream();  // like a cancelled gRPC stream; the next collective opens a fresh one
    if (InMemoryRingMember* right = network_.Find(right_address_)) {
      stream_id_ = right->inbox_.OpenStream();
    }
  }

  // The stream ends, as when this process dies: a collective the neighbour is part-way through
  // fails with UNAVAILABLE.
  void EndStream() {
    if (!stream_id_.has_value()) return;
    if (InMemoryRingMember* right = network_.Find(right_address_)) {
      right->inbox_.StreamEnded(*stream_id_);
    }
    stream_id_.reset();
  }

 private:
  // Into the right neighbour's inbox, while it lives.
  absl::Status Deliver(Segment segment) {
    InMemoryRingMember* right = network_.Find(right_address_);
    if (right == nullptr || !stream_id_.has_value()) {
      return absl::UnavailableError(
          absl::StrCat("ring neighbour ", right_address_, " is gone (connection refused)"));
    }
    if (network_.Loses(right_address_, segment.header)) return absl::OkStatus();
    return right->inbox_.Accept(std::move(segment), *stream_id_);
  }

  const RingTopology topology_;
  RingInbox& own_inbox_;
  InMemoryRingNetwork& network_;
  const std::string right_address_;
  std::optional<uint64_t> stream_id_;
};

InMemoryRingMember::InMemoryRingMember(InMemoryRingNetwork& network, std::string address)
    : network_(network),
      address_(std::move(address)),
      inbox_(RingTopology{0, 1, 0}, RingInboxOptions{}, LinkReceiveMetrics{}) {}

InMemoryRingMember::~InMemoryRingMember() = default;

absl::Status InMemoryRingMember::Reconfigure(RingTopology topology,
                                             const std::vector<std::string>& addresses,
                                             const std::string& /*link_key*/) {
  RETURN_IF_ERROR(ValidateRing(topology, addresses));
  allreduce_.reset();
  link_.reset();
  inbox_.SetTopology(topology, LinkReceiveMetrics{});
  link_ = std::make_unique<Link>(topology, inbox_, network_, addresses[topology.right()]);
  allreduce_ = std::make_unique<RingAllreduce>(*link_, LinkSendMetrics{});
  return absl::OkStatus();
}

absl::Status InMemoryRingMember::Allreduce(uint64_t collective, absl::Span<float> buffer,
                                           const AllreduceOptions& options) {
  if (allreduce_ == nullptr) {
    return absl::FailedPreconditionError("ring member has no generation; call Reconfigure()");
  }
  return allreduce_->Run(collective, buffer, options);
}

InMemoryRingMember& InMemoryRingNetwork::Join(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] =
      members_.emplace(address, std::make_unique<InMemoryRingMember>(*this, address));
  return *it->second;
}

void InMemoryRingNetwork::Kill(const std::string& address) {
  InMemoryRingMember* member = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto it = members_.find(address);
    if (it == members_.end() || killed_.count(address) > 0) return;
    member = it->second.get();
  }
  // End its stream while the neighbour can still be found, then make it unreachable.
  if (member->link_ != nullptr) member->link_->EndStream();
  absl::MutexLock lock(&mu_);
  killed_.insert(address);
}

void InMemoryRingNetwork::LoseSegments(
    std::function<bool(const std::string& to, const SegmentHeader&)> lost) {
  absl::MutexLock lock(&mu_);
  lost_ = std::move(lost);
}

bool InMemoryRingNetwork::Loses(const std::string& to, const SegmentHeader& header) {
  absl::MutexLock lock(&mu_);
  return lost_ && lost_(to, header);
}

InMemoryRingMember* InMemoryRingNetwork::Find(const std::string& address) {
  absl::MutexLock lock(&mu_);
  if (killed_.count(address) > 0) return nullptr;
  auto it = members_.find(address);
  return it == members_.end() ? nullptr : it->second.get();
}

}  // namespace ringside::ring
