// RingMember: everything one worker needs to take part in ring allreduces for one generation —
// the inbox its RingPeer service feeds, the stream to its right neighbour, and the link metrics —
// wired together. The gRPC server is the caller's (one server per process carries every
// service), so service() must be registered before the server starts, and Connect() may be
// called once the neighbours' addresses are known.
//
// Thread-safety: service() is safe from gRPC threads; Connect() and Allreduce() are for one
// controlling thread. Errors per RingAllreduce.
#ifndef RINGSIDE_RING_RING_MEMBER_H_
#define RINGSIDE_RING_RING_MEMBER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/stream_limits.h"
#include "common/transport_security.h"
#include "ring/allreduce.h"
#include "ring/collective.h"
#include "ring/grpc_transport.h"
#include "ring/inbox.h"

namespace ringside::ring {

class RingMember final : public Collective {
 public:
  // `metrics` may be null (nothing counted); otherwise it must outlive this object. `security`
  // secures the stream to the right neighbour (the server carrying service() is the caller's).
  // `stream_limits` bound the streams service() holds (common/stream_limits.h).
  RingMember(RingTopology topology, Metrics* metrics, TransportSecurity security,
             RingInboxOptions options = {}, StreamLimits stream_limits = {});

  grpc::Service* service() { return &service_; }
  // Its streams' counts (RingPeerService); whether its stream to the right neighbour is open.
  const RingPeerService& peer_service() const { return service_; }
  bool right_stream_open() const { return transport_ != nullptr && transport_->stream_open(); }

  // Opens the link to the right neighbour. `addresses[r]` is rank r's RingPeer address;
  // `link_key` is presented on it (empty: none).
  absl::Status Connect(const std::vector<std::string>& addresses, const std::string& link_key = "");

  // A new generation (membership change): the inbox restarts, the right neighbour may change.
  absl::Status Reconfigure(RingTopology topology, const std::vector<std::string>& addresses,
                           const std::string& link_key) override;

  // An elastic member's credential: incoming streams must present their link key from now on.
  void SetMemberCredential(std::string credential) {
    service_.SetMemberCredential(std::move(credential));
  }

  // The controller announced `generation`: a collective of an older one waiting for segments
  // fails at once with ABORTED (RingInbox::Supersede). Safe from any thread.
  void Supersede(uint64_t generation) override { inbox_.Supersede(generation); }

  absl::Status Allreduce(uint64_t collective, absl::Span<float> buffer,
                         const AllreduceOptions& options) override;

  const RingTopology& topology() const { return topology_; }

 private:
  LinkReceiveMetrics ReceiveMetrics() const;

  RingTopology topology_;
  Metrics* metrics_;
  const TransportSecurity security_;
  RingInbox inbox_;
  RingPeerService service_;
  std::unique_ptr<GrpcRingTransport> transport_;
  std::unique_ptr<RingAllreduce> allreduce_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_RING_MEMBER_H_
