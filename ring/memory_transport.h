// In-memory rings for tests: each rank's transport delivers straight into its right neighbour's
// RingInbox, so the same validation runs as over gRPC. Run each rank on its own thread.
// InMemoryRing is one fixed generation; InMemoryRingNetwork has members that regroup by address
// and can be killed. Each owns its inboxes and transports and must outlive the threads using
// them. Thread-safe as RingInbox is; each transport is used by one collective thread.
#ifndef RINGSIDE_RING_MEMORY_TRANSPORT_H_
#define RINGSIDE_RING_MEMORY_TRANSPORT_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "ring/allreduce.h"
#include "ring/collective.h"
#include "ring/inbox.h"
#include "ring/transport.h"

namespace ringside::ring {

class InMemoryTransport final : public RingTransport {
 public:
  InMemoryTransport(RingTopology topology, RingInbox& own_inbox, RingInbox& right_inbox);

  const RingTopology& topology() const override { return topology_; }
  void BeginCollective(uint64_t collective) override;
  absl::Status SendFilled(const SegmentHeader& header, size_t payload_bytes,
                          absl::FunctionRef<void(char*)> fill) override;
  absl::Status Forward(const SegmentHeader& header, const SegmentPayload& payload) override;
  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override;
  void AbandonCollective(const absl::Status& why) override;

 private:
  RingTopology topology_;
  RingInbox& own_inbox_;
  RingInbox& right_inbox_;
  uint64_t stream_id_;
};

// A fixed ring of `world` ranks, one generation.
class InMemoryRing {
 public:
  explicit InMemoryRing(int world, uint64_t generation = 0, RingInboxOptions options = {});
  RingTransport& transport(int rank) { return *transports_[rank]; }
  RingInbox& inbox(int rank) { return *inboxes_[rank]; }

 private:
  std::vector<std::unique_ptr<RingInbox>> inboxes_;
  std::vector<std::unique_ptr<InMemoryTransport>> transports_;
};

class InMemoryRingNetwork;

// One member of an InMemoryRingNetwork: a Collective like RingMember, wired by address.
class InMemoryRingMember final : public Collective {
 public:
  InMemoryRingMember(InMemoryRingNetwork& network, std::string address);
  ~InMemoryRingMember() override;

  // No link keys in memory: `link_key` is ignored (only real streams carry one).
  absl::Status Reconfigure(RingTopology topology, const std::vector<std::string>& addresses,
                           const std::string& link_key) override;
  absl::Status Allreduce(uint64_t collective, absl::Span<float> buffer,
                         const AllreduceOptions& options) override;
  void Supersede(uint64_t generation) override { inbox_.Supersede(generation); }

  const std::string& address() const { return address_; }

 private:
  friend class InMemoryRingNetwork;
  class Link;

  InMemoryRingNetwork& network_;
  const std::string address_;
  RingInbox inbox_;
  std::unique_ptr<Link> link_;  // to the right neighbour of the current generation
  std::unique_ptr<RingAllreduce> allreduce_;
};

// An in-process network of ring members addressed by name, for testing the elastic protocol
// with trainers as threads: a generation's ring is wired by addresses as over gRPC, and Kill()
// makes a member behave as a process ended by SIGKILL: its outgoing stream ends (the right
// neighbour's collective fails as on a broken gRPC stream) and segments sent to it are refused
// with UNAVAILABLE. Thread-safe; members are owned by the network and live as long as it does.
class InMemoryRingNetwork {
 public:
  // A new member serving at `address` (which must be new).
  InMemoryRingMember& Join(const std::string& address);
  // The member at `address` is gone; call once its thread no longer uses it.
  void Kill(const std::string& address);
  // Segments for which `lost` returns true never reach the member at the address it is given,
  // as on a link that loses them silently: the member waits for them until its collective is
  // superseded or its deadline passes (tests: a member left a step behind the others). Null:
  // nothing is lost.
  void LoseSegments(std::function<bool(const std::string& to, const SegmentHeader&)> lost);

 private:
  friend class InMemoryRingMember;
  // The live member at `address`, or null (unknown or killed).
  InMemoryRingMember* Find(const std::string& address);
  // Whether LoseSegments' filter loses this segment to `to`.
  bool Loses(const std::string& to, const SegmentHeader& header);

  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<InMemoryRingMember>> members_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> killed_ ABSL_GUARDED_BY(mu_);
  std::function<bool(const std::string&, const SegmentHeader&)> lost_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_MEMORY_TRANSPORT_H_
