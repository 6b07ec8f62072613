#include "ring/grpc_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "ring/segment_codec.h"

namespace ringside::ring {
namespace {

// The generated method, called with raw buffers on both ends (see ring/segment_codec.h).
constexpr char kStreamMethod[] = "/ringside.proto.RingPeer/Stream";

// Bounded wait for queued segments to drain when a sender closes normally.
constexpr absl::Duration kCloseGrace = absl::Seconds(5);

// One reactor per incoming stream; owns its message buffer and deletes itself in OnDone.
class StreamReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  StreamReactor(RingInbox& inbox, grpc::ByteBuffer* summary)
      : inbox_(inbox), summary_(summary), stream_id_(inbox.OpenStream()) {
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the sender closed or cancelled the stream
      inbox_.StreamEnded(stream_id_);
      proto::RingStreamSummary summary;
      summary.set_segments_accepted(accepted_);
      bool own_buffer = false;
      grpc::SerializationTraits<proto::RingStreamSummary>::Serialize(summary, summary_,
                                                                     &own_buffer);
      Finish(grpc::Status::OK);
      return;
    }
    absl::StatusOr<Segment> segment = DecodeSegment(message_);
    absl::Status status = segment.status();
    if (status.ok()) status = inbox_.Accept(*std::move(segment), stream_id_);
    if (!status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    ++accepted_;
    message_.Clear();
    StartRead(&message_);
  }

  void OnDone() override { delete this; }

 private:
  RingInbox& inbox_;
  grpc::ByteBuffer* summary_;
  const uint64_t stream_id_;
  grpc::ByteBuffer message_;
  uint64_t accepted_ = 0;
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* RingPeerService::Stream(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* summary) {
  return new StreamReactor(inbox_, summary);
}

RingStreamSender::RingStreamSender(std::string address, std::string peer_name,
                                   std::function<void(const absl::Status&)> on_error,
                                   prometheus::Counter* wire)
    : address_(std::move(address)),
      peer_name_(std::move(peer_name)),
      on_error_(std::move(on_error)),
      wire_(wire),
      channel_(MakeChannel(address_)),
      method_(kStreamMethod, grpc::internal::RpcMethod::CLIENT_STREAMING, channel_),
      thread_([this] { Loop(); }) {}

RingStreamSender::~RingStreamSender() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !busy_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&drained), kCloseGrace) && context_ != nullptr) {
      context_->TryCancel();
    }
    queue_.clear();
  }
  thread_.join();
}

absl::Status RingStreamSender::Enqueue(grpc::ByteBuffer segment) {
  absl::MutexLock lock(&mu_);
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(segment));
  return absl::OkStatus();
}

void RingStreamSender::Abandon() {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  queue_.clear();
  error_ = absl::OkStatus();
  if (context_ != nullptr) context_->TryCancel();
}

void RingStreamSender::Loop() {
  while (true) {
    grpc::ByteBuffer segment;
    uint64_t epoch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) break;  // stopping with nothing left to send
      segment = std::move(queue_.front());
      queue_.pop_front();
      epoch = epoch_;
      busy_ = true;
    }
    const bool ok = WriteOne(segment, epoch);
    absl::MutexLock lock(&mu_);
    busy_ = false;
    if (!ok) queue_.clear();
  }
  CloseStream();
}

bool RingStreamSender::WriteOne(const grpc::ByteBuffer& segment, uint64_t epoch) {
  if (writer_ != nullptr && stream_epoch_ != epoch) CloseStream();  // abandoned: start afresh
  if (writer_ == nullptr) {
    stream_context_ = std::make_unique<grpc::ClientContext>();
    stream_context_->set_wait_for_ready(true);  // a peer still starting up is waited for
    summary_.Clear();
    {
      // Published before the call starts: opening blocks until the peer is reachable, and
      // Abandon() or the destructor must be able to cancel that wait (gRPC defers a cancel
      // issued before the call exists until it does).
      absl::MutexLock lock(&mu_);
      context_ = stream_context_.get();
      if (epoch != epoch_) context_->TryCancel();
    }
    writer_.reset(grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
        channel_.get(), method_, stream_context_.get(), &summary_));
    stream_epoch_ = epoch;
  }
  if (writer_->Write(segment)) {
    if (wire_ != nullptr) wire_->Increment(static_cast<double>(segment.Length()));
    return true;
  }
  const grpc::Status status = writer_->Finish();
  writer_.reset();
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  stream_context_.reset();
  absl::Status error = absl::Status(
      static_cast<absl::StatusCode>(status.error_code()),
      absl::StrCat("stream to ", peer_name_, " (", address_, ") failed: ", status.error_message()));
  if (status.ok()) error = absl::UnavailableError(absl::StrCat(peer_name_, " closed the stream"));
  {
    absl::MutexLock lock(&mu_);
    if (epoch != epoch_) return false;  // abandoned on purpose: not an error to report
    error_ = error;
  }
  on_error_(error);
  return false;
}

void RingStreamSender::CloseStream() {
  if (writer_ == nullptr) return;
  writer_->WritesDone();
  writer_->Finish();
  writer_.reset();
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  stream_context_.reset();
}

GrpcRingTransport::GrpcRingTransport(RingTopology topology, const std::string& right_address,
                                     RingInbox& inbox, prometheus::Counter* wire_bytes)
    : topology_(topology),
      inbox_(inbox),
      sender_(
          right_address, WorkerName(topology.right()),
          [&inbox](const absl::Status& status) { inbox.Fail(status); }, wire_bytes) {}

absl::Status GrpcRingTransport::Send(const SegmentHeader& header, absl::Span<const char> payload) {
  return sender_.Enqueue(EncodeSegment(header, payload));
}

}  // namespace ringside::ring
