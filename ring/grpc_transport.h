// The gRPC adapter of the ring: RingPeerService receives segments from the left neighbour into
// a RingInbox; RingStreamSender keeps one long-lived client stream to the right neighbour fed by
// a send queue; GrpcRingTransport joins the two behind the RingTransport interface.
//
// Deadlines: the stream outlives collectives, so it carries no deadline of its own; each
// collective's deadline bounds it instead: a collective that fails or times out abandons the
// stream (TryCancel), which unblocks a Write stuck on flow control or on a peer that never came
// up, and the next collective opens a fresh stream.
#ifndef RINGSIDE_RING_GRPC_TRANSPORT_H_
#define RINGSIDE_RING_GRPC_TRANSPORT_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "proto/ring.grpc.pb.h"
#include "ring/inbox.h"
#include "ring/transport.h"

namespace ringside::ring {

// Serves RingPeer.Stream: every stream's segments go through `inbox` (which must outlive the
// service). Thread-safe; reactors never block.
// The method is served raw: segments are decoded straight from gRPC's slices (segment_codec.h).
class RingPeerService final
    : public proto::RingPeer::WithRawCallbackMethod_Stream<proto::RingPeer::Service> {
 public:
  explicit RingPeerService(RingInbox& inbox) : inbox_(inbox) {}
  grpc::ServerReadReactor<grpc::ByteBuffer>* Stream(grpc::CallbackServerContext* context,
                                                    grpc::ByteBuffer* summary) override;

 private:
  RingInbox& inbox_;
};

// Owns a sender thread and the stream to one peer. Thread-safe.
class RingStreamSender {
 public:
  // `on_error` runs on the sender thread when the stream fails (not when it is abandoned).
  // `wire` counts serialized bytes (ringside_link_wire_bytes_total); null is not counted.
  RingStreamSender(std::string address, std::string peer_name,
                   std::function<void(const absl::Status&)> on_error, prometheus::Counter* wire);
  ~RingStreamSender();  // closes the stream gracefully (bounded wait), then joins
  RingStreamSender(const RingStreamSender&) = delete;
  RingStreamSender& operator=(const RingStreamSender&) = delete;

  // Queues a segment; returns the stream's error if it has failed since the last Abandon().
  absl::Status Enqueue(grpc::ByteBuffer segment);
  // Drops queued segments, cancels the stream in use and clears the error.
  void Abandon();

 private:
  void Loop();
  bool WriteOne(const grpc::ByteBuffer& segment, uint64_t epoch);
  void CloseStream();

  const std::string address_;
  const std::string peer_name_;
  const std::function<void(const absl::Status&)> on_error_;
  prometheus::Counter* const wire_;
  std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod method_;

  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);  // encoded segments
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;  // of the open stream

  // Used by the sender thread only.
  std::unique_ptr<grpc::ClientContext> stream_context_;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer_;
  grpc::ByteBuffer summary_;
  uint64_t stream_epoch_ = 0;
  std::thread thread_;
};

class GrpcRingTransport final : public RingTransport {
 public:
  // `inbox` is the one RingPeerService feeds; it must outlive this transport.
  GrpcRingTransport(RingTopology topology, const std::string& right_address, RingInbox& inbox,
                    prometheus::Counter* wire_bytes);

  const RingTopology& topology() const override { return topology_; }
  void BeginCollective(uint64_t collective) override { inbox_.BeginCollective(collective); }
  absl::Status Send(const SegmentHeader& header, absl::Span<const char> payload) override;
  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override {
    return inbox_.Next(collective, deadline);
  }
  void AbandonCollective(const absl::Status& why) override { sender_.Abandon(); }

 private:
  RingTopology topology_;
  RingInbox& inbox_;
  RingStreamSender sender_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_GRPC_TRANSPORT_H_
