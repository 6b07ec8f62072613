// The gRPC adapter of the ring: RingPeerService receives segments from the left neighbour into
// a RingInbox; RingStreamSender keeps one long-lived client stream to the right neighbour fed by
// a send queue; GrpcRingTransport joins the two behind the RingTransport interface.
//
// Both ends use gRPC's public callback API only and move raw grpc::ByteBuffers (segment_codec.h):
// the server through the generated raw callback method, the sender through grpc::GenericStub
// with a ClientBidiReactor (on the wire a client stream like any other: the server cannot tell).
//
// Deadlines: the stream outlives collectives, so it carries no deadline of its own; each
// collective's deadline bounds it instead: a collective that fails or times out abandons the
// stream (TryCancel), which ends a write stuck on flow control or on a peer that never came up,
// and the next collective opens a fresh stream.
#ifndef RINGSIDE_RING_GRPC_TRANSPORT_H_
#define RINGSIDE_RING_GRPC_TRANSPORT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/stream_limits.h"
#include "common/transport_security.h"
#include "grpcpp/channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/ring.grpc.pb.h"
#include "ring/inbox.h"
#include "ring/transport.h"

namespace ringside::ring {

// Serves RingPeer.Stream: every stream's segments go through `inbox` (which must outlive the
// service). Thread-safe; reactors never block.
// The method is served raw: segments are decoded straight from gRPC's slices (segment_codec.h).
// When a call starts, before anything is read: with a credential set, its link key must be the
// one of the generation and sender rank its metadata claims (PERMISSION_DENIED), and every
// segment must then carry those (PERMISSION_DENIED); then the stream is admitted within `limits`
// (per authenticated sender, or per TLS identity / address in a static ring; RESOURCE_EXHAUSTED
// beyond). A stream whose first segment, or next one, is later than `limits` allow ends with
// DEADLINE_EXCEEDED; the sender (RingStreamSender) takes such an end of an idle stream with
// nothing lost as no failure and opens a fresh stream for its next segment.
class RingPeerService final
    : public proto::RingPeer::WithRawCallbackMethod_Stream<proto::RingPeer::Service> {
 public:
  explicit RingPeerService(RingInbox& inbox, StreamLimits limits = {});
  grpc::ServerReadReactor<grpc::ByteBuffer>* Stream(grpc::CallbackServerContext* context,
                                                    grpc::ByteBuffer* summary) override;
  // An elastic member's credential (common/auth.h): streams opened from now on must present the
  // link key the controller gave their sender. Empty (a static ring): none is checked.
  void SetMemberCredential(std::string credential);

  // Streams held now; refused for a bound so far; ended for silence so far.
  int streams_held() const { return admission_.held(); }
  uint64_t streams_refused() const { return admission_.refused(); }
  uint64_t streams_expired() const { return watchdog_.expired(); }

 private:
  // The call's claim, its key checked with the credential; `peer`: whom it counts against.
  absl::StatusOr<LinkClaim> Authenticate(const grpc::CallbackServerContext& context,
                                         std::string& peer) const;

  RingInbox& inbox_;
  mutable absl::Mutex mu_;
  std::string credential_ ABSL_GUARDED_BY(mu_);
  StreamAdmission admission_;
  StreamWatchdog watchdog_;  // last: its thread may expire streams until it is destroyed
};

// Owns the stream to one peer and its send queue. Runs no thread of its own: Enqueue() starts a
// write when none is in flight, and each completed write starts the next queued segment from
// gRPC's callback thread (a queue pop and StartWrite; nothing there blocks or copies payloads).
// One write is in flight at a time, so gRPC's flow control paces the queue as a blocking write
// did; the queue itself is unbounded (the inbox's cap bounds how far a sender runs ahead).
// Enqueue(), Abandon() and the destructor must be called from one thread at a time (the
// collective's); they never run gRPC calls under the sender's lock.
class RingStreamSender {
 public:
  // `on_error` runs on a gRPC callback thread when the stream fails (not when it is abandoned
  // or closed by this side); it must not block. `wire` counts serialized bytes
  // (ringside_link_wire_bytes_total); null is not counted. `security`: the channel's.
  // `claim` (its link key, generation and sender rank: common/auth.h) is presented on every
  // stream; an empty key: none.
  RingStreamSender(std::string address, std::string peer_name,
                   std::function<void(const absl::Status&)> on_error, prometheus::Counter* wire,
                   const TransportSecurity& security, LinkClaim claim = {});
  // Closes the stream gracefully (bounded waits for the queue to drain and the peer to answer,
  // then cancels) and returns once no reaction of any of its streams can run any more.
  ~RingStreamSender();
  RingStreamSender(const RingStreamSender&) = delete;
  RingStreamSender& operator=(const RingStreamSender&) = delete;

  // Queues a segment (opening the stream with wait_for_ready if there is none); returns the
  // stream's error if it has failed since the last Abandon().
  absl::Status Enqueue(grpc::ByteBuffer segment);
  // Drops queued segments, cancels the stream in use and clears the error.
  void Abandon();
  // Whether a stream is open now (the next segment opens one otherwise).
  bool stream_open() const;
  // The send side's state, for a receive that timed out: the peer and its address, the channel's
  // connectivity, the segments written and still queued since the sender was made.
  std::string Describe() const;

 private:
  class Stream;  // one RingPeer.Stream call: a ClientBidiReactor
  struct Link;   // the queue and state shared with the streams' reactions

  std::shared_ptr<Link> link_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;  // declared after link_: destroyed first, once every stream is gone
};

class GrpcRingTransport final : public RingTransport {
 public:
  // `inbox` is the one RingPeerService feeds; it must outlive this transport.
  GrpcRingTransport(RingTopology topology, const std::string& right_address, RingInbox& inbox,
                    prometheus::Counter* wire_bytes, const TransportSecurity& security,
                    std::string link_key = "");

  const RingTopology& topology() const override { return topology_; }
  void BeginCollective(uint64_t collective) override { inbox_.BeginCollective(collective); }
  absl::Status SendFilled(const SegmentHeader& header, size_t payload_bytes,
                          absl::FunctionRef<void(char*)> fill) override;
  absl::Status Forward(const SegmentHeader& header, const SegmentPayload& payload) override;
  // A receive past its deadline says what the send side did meanwhile: a ring waits in a cycle,
  // and a stream of this worker's that never connected is as likely the cause as a silent left.
  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override;
  void AbandonCollective(const absl::Status& why) override { sender_.Abandon(); }
  bool stream_open() const { return sender_.stream_open(); }

 private:
  RingTopology topology_;
  RingInbox& inbox_;
  RingStreamSender sender_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_GRPC_TRANSPORT_H_
