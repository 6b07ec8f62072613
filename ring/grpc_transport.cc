#include "ring/grpc_transport.h"

#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "ring/segment_codec.h"

namespace ringside::ring {
namespace {

// The generated method, called with raw buffers on both ends (see ring/segment_codec.h).
constexpr char kStreamMethod[] = "/ringside.proto.RingPeer/Stream";

// Bounded wait for queued segments to drain when a sender closes normally, and again for the
// peer to answer the half-close.
constexpr absl::Duration kCloseGrace = absl::Seconds(5);

// One reactor per incoming stream; owns its message buffer and deletes itself in OnDone.
//
// With the receiver's member credential set (an elastic job), the stream must prove it is the
// assigned left neighbour's of its generation: its link key (metadata, common/auth.h) is checked
// against the first segment's generation and sender rank, and every later segment must keep
// them. A stream that fails is refused (PERMISSION_DENIED) before anything reaches the inbox, so
// it cannot fail the collective in progress.
class StreamReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  StreamReactor(RingInbox& inbox, grpc::ByteBuffer* summary, std::string credential,
                std::string link_key)
      : inbox_(inbox),
        summary_(summary),
        stream_id_(inbox.OpenStream()),
        credential_(std::move(credential)),
        link_key_(std::move(link_key)) {
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
    if (status.ok()) status = Authorize(segment->header);
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
  absl::Status Authorize(const SegmentHeader& header) {
    if (credential_.empty()) return absl::OkStatus();  // a static ring: mutual TLS only
    if (!authorized_) {
      if (!SecretsEqual(link_key_,
                        RingLinkKey(credential_, header.generation, header.sender_rank))) {
        return absl::PermissionDeniedError(absl::StrCat(
            "this stream's link key does not make it the link of ", WorkerName(header.sender_rank),
            " in generation ", header.generation, " to this worker; refused"));
      }
      authorized_ = true;
      generation_ = header.generation;
      sender_rank_ = header.sender_rank;
    } else if (header.generation != generation_ || header.sender_rank != sender_rank_) {
      return absl::PermissionDeniedError("a ring stream carries one sender's one generation");
    }
    return absl::OkStatus();
  }

  RingInbox& inbox_;
  grpc::ByteBuffer* summary_;
  const uint64_t stream_id_;
  const std::string credential_;  // this receiver's; empty: no link keys checked
  const std::string link_key_;    // what the sender presented
  bool authorized_ = false;
  uint64_t generation_ = 0;
  int sender_rank_ = -1;
  grpc::ByteBuffer message_;
  uint64_t accepted_ = 0;
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* RingPeerService::Stream(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* summary) {
  std::string credential;
  {
    absl::MutexLock lock(&mu_);
    credential = credential_;
  }
  return new StreamReactor(inbox_, summary, std::move(credential),
                           MetadataValue(*context, kLinkKeyMetadata));
}

void RingPeerService::SetMemberCredential(std::string credential) {
  absl::MutexLock lock(&mu_);
  credential_ = std::move(credential);
}

// The sender's state, shared with its streams so that a reaction finishing after the sender
// stopped waiting for it still has a lock to release.
struct RingStreamSender::Link {
  Link(std::string address, std::string peer_name,
       std::function<void(const absl::Status&)> on_error, prometheus::Counter* wire,
       std::string link_key)
      : address(std::move(address)),
        peer_name(std::move(peer_name)),
        on_error(std::move(on_error)),
        wire(wire),
        link_key(std::move(link_key)) {}

  const std::string address;
  const std::string peer_name;
  const std::function<void(const absl::Status&)> on_error;
  prometheus::Counter* const wire;
  const std::string link_key;  // presented on every stream; empty: none

  absl::Mutex mu;
  std::deque<grpc::ByteBuffer> queue ABSL_GUARDED_BY(mu);  // encoded segments, not yet written
  std::shared_ptr<Stream> stream ABSL_GUARDED_BY(mu);      // of the current epoch, if open
  bool stopping ABSL_GUARDED_BY(mu) = false;
  uint64_t epoch ABSL_GUARDED_BY(mu) = 0;
  absl::Status error ABSL_GUARDED_BY(mu);
  int live_streams ABSL_GUARDED_BY(mu) = 0;  // Stream objects not yet destroyed
};

// One RingPeer.Stream call to the right neighbour. Its reactions run on gRPC's callback threads
// and only move queue entries and flags under the link's lock; gRPC calls (StartWrite,
// RemoveHold, TryCancel) are always made after that lock is released, because gRPC may run a
// reaction inline from inside them.
//
// A hold keeps the call from finishing while Enqueue() may still start a write from outside the
// reactions. It is removed once no write is in flight and the stream is retired: the peer ended
// it (its read completed), a write failed, it was abandoned, or it is being closed.
class RingStreamSender::Stream final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Stream(std::shared_ptr<Link> link, uint64_t epoch) : link(std::move(link)), epoch(epoch) {
    context_->set_wait_for_ready(true);  // a peer still starting up is waited for
    if (!this->link->link_key.empty()) {
      context_->AddMetadata(kLinkKeyMetadata, this->link->link_key);
    }
  }

  ~Stream() override {
    context_.reset();  // releases the call (and its channel reference) before the count drops
    absl::MutexLock lock(&link->mu);
    --link->live_streams;
  }

  // Activates the call; with `write`, its first write is `in_flight`. Outside the lock.
  void Start(grpc::GenericStub& stub, bool write) {
    stub.PrepareBidiStreamingCall(context_.get(), kStreamMethod, grpc::StubOptions(), this);
    AddHold();
    StartRead(&summary_);  // completes when the peer ends the call, whichever way
    if (write) StartWrite(&in_flight);
    StartCall();
  }

  grpc::ClientContext& context() { return *context_; }

  // Retires the hold if nothing can start a write any more; true: the caller must RemoveHold().
  bool ReleaseHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(link->mu) {
    if (!held || writing) return false;
    if (!ended && !closing && link->stream.get() == this) return false;
    held = false;
    return true;
  }

  void OnWriteDone(bool ok) override {
    bool next = false, release = false;
    size_t written = 0;
    {
      absl::MutexLock lock(&link->mu);
      written = in_flight.Length();
      if (!ok) ended = true;
      if (!ended && link->stream.get() == this && !link->queue.empty()) {
        in_flight = std::move(link->queue.front());
        link->queue.pop_front();
        next = true;
      } else {
        writing = false;
        release = ReleaseHoldLocked();
      }
    }
    if (ok && link->wire != nullptr) link->wire->Increment(static_cast<double>(written));
    if (next) StartWrite(&in_flight);
    if (release) RemoveHold();
  }

  void OnReadDone(bool ok) override {
    bool release = false;
    {
      absl::MutexLock lock(&link->mu);
      ended = true;
      release = ReleaseHoldLocked();
    }
    if (release) RemoveHold();
  }

  void OnDone(const grpc::Status& status) override {
    absl::Status error;
    {
      absl::MutexLock lock(&link->mu);
      done = true;
      if (link->stream.get() == this) link->stream = nullptr;
      if (epoch == link->epoch && !link->stopping && !closing) {
        error = status.ok()
                    ? absl::UnavailableError(absl::StrCat(link->peer_name, " closed the stream"))
                    : absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                                   absl::StrCat("stream to ", link->peer_name, " (", link->address,
                                                ") failed: ", status.error_message()));
        link->queue.clear();
        link->error = error;
      }
    }
    if (!error.ok()) link->on_error(error);
    std::shared_ptr<Stream> last = std::move(self);  // may destroy this on return
  }

  const std::shared_ptr<Link> link;
  const uint64_t epoch;
  // Guarded by link->mu.
  bool writing = false;  // a write of `in_flight` is in flight (or about to be started)
  bool ended = false;    // a write failed or the peer ended the call: no more writes
  bool held = true;      // the hold taken in Start()
  bool closing = false;  // this side half-closed the call (WritesDone): a graceful end
  bool done = false;     // OnDone has run
  // Owned by whoever set `writing`; gRPC reads it until OnWriteDone.
  grpc::ByteBuffer in_flight;
  // Keeps the reactor alive until OnDone.
  std::shared_ptr<Stream> self;

 private:
  std::unique_ptr<grpc::ClientContext> context_ = std::make_unique<grpc::ClientContext>();
  grpc::ByteBuffer summary_;  // the peer's RingStreamSummary; read, not used
};

RingStreamSender::RingStreamSender(std::string address, std::string peer_name,
                                   std::function<void(const absl::Status&)> on_error,
                                   prometheus::Counter* wire, const TransportSecurity& security,
                                   std::string link_key)
    : link_(std::make_shared<Link>(address, std::move(peer_name), std::move(on_error), wire,
                                   std::move(link_key))),
      stub_(MakeChannel(address, security)) {}

RingStreamSender::~RingStreamSender() {
  Link& link = *link_;
  std::shared_ptr<Stream> stream;
  bool cancel = false, close = false, release = false;
  {
    absl::MutexLock lock(&link.mu);
    link.stopping = true;
    auto drained = [&link]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(link.mu) {
      const Stream* s = link.stream.get();
      return s == nullptr || s->ended || (link.queue.empty() && !s->writing);
    };
    cancel = !link.mu.AwaitWithTimeout(absl::Condition(&drained), kCloseGrace);
    link.queue.clear();
    stream = std::move(link.stream);
    if (stream != nullptr) {
      close = !cancel && !stream->ended;
      stream->closing = close;
      release = stream->ReleaseHoldLocked();
    }
  }
  if (stream != nullptr) {
    if (cancel) stream->context().TryCancel();
    if (close) stream->StartWritesDone();
    if (release) stream->RemoveHold();
    bool answered;
    {
      absl::MutexLock lock(&link.mu);
      answered = link.mu.AwaitWithTimeout(absl::Condition(&stream->done), kCloseGrace);
    }
    if (!answered) stream->context().TryCancel();
    stream.reset();
  }
  // Abandoned streams were cancelled, so their reactions end promptly.
  absl::MutexLock lock(&link.mu);
  auto all_gone = [&link]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(link.mu) { return link.live_streams == 0; };
  link.mu.Await(absl::Condition(&all_gone));
}

absl::Status RingStreamSender::Enqueue(grpc::ByteBuffer segment) {
  Link& link = *link_;
  std::shared_ptr<Stream> opened, write;
  {
    absl::MutexLock lock(&link.mu);
    if (!link.error.ok()) return link.error;
    link.queue.push_back(std::move(segment));
    if (link.stream == nullptr) {
      opened = std::make_shared<Stream>(link_, link.epoch);
      opened->self = opened;
      link.stream = opened;
      ++link.live_streams;
    }
    Stream& stream = *link.stream;
    if (!stream.writing && !stream.ended) {
      stream.writing = true;
      stream.in_flight = std::move(link.queue.front());
      link.queue.pop_front();
      write = link.stream;
    }
  }
  if (opened != nullptr) {
    opened->Start(stub_, /*write=*/write != nullptr);
  } else if (write != nullptr) {
    write->StartWrite(&write->in_flight);
  }
  return absl::OkStatus();
}

void RingStreamSender::Abandon() {
  std::shared_ptr<Stream> stream;
  bool release = false;
  {
    absl::MutexLock lock(&link_->mu);
    ++link_->epoch;
    link_->queue.clear();
    link_->error = absl::OkStatus();
    stream = std::move(link_->stream);
    if (stream != nullptr) release = stream->ReleaseHoldLocked();
  }
  if (stream == nullptr) return;
  stream->context().TryCancel();
  if (release) stream->RemoveHold();
}

GrpcRingTransport::GrpcRingTransport(RingTopology topology, const std::string& right_address,
                                     RingInbox& inbox, prometheus::Counter* wire_bytes,
                                     const TransportSecurity& security, std::string link_key)
    : topology_(topology),
      inbox_(inbox),
      sender_(
          right_address, WorkerName(topology.right()),
          [&inbox](const absl::Status& status) { inbox.Fail(status); }, wire_bytes, security,
          std::move(link_key)) {}

absl::Status GrpcRingTransport::SendFilled(const SegmentHeader& header, size_t payload_bytes,
                                           absl::FunctionRef<void(char*)> fill) {
  return sender_.Enqueue(EncodeFilledSegment(header, payload_bytes, fill));
}

absl::Status GrpcRingTransport::Forward(const SegmentHeader& header,
                                        const SegmentPayload& payload) {
  return sender_.Enqueue(EncodeForwardedSegment(header, payload));
}

}  // namespace ringside::ring
