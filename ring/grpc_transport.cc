#include "ring/grpc_transport.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/status_macros.h"
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
// With the receiver's member credential set (an elastic job), the stream proved when its call
// started that it is the assigned left neighbour's of its generation (RingPeerService::Stream):
// every segment must carry the generation and sender rank its link key claims. A segment that
// does not is refused (PERMISSION_DENIED) before it reaches the inbox, so it cannot fail the
// collective in progress. The stream is watched for silence (StreamWatchdog): a first segment
// later than the limit, or a gap longer than the idle limit, ends it with DEADLINE_EXCEEDED, from
// the watchdog's thread; so the one Finish is claimed under the reactor's mutex.
class StreamReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  StreamReactor(RingInbox& inbox, grpc::ByteBuffer* summary, LinkClaim claim,
                StreamAdmission::Ticket ticket, StreamWatchdog& watchdog)
      : inbox_(inbox),
        summary_(summary),
        stream_id_(inbox.OpenStream()),
        claim_(std::move(claim)),
        ticket_(std::move(ticket)) {
    // The watch's destruction waits for an expiry in progress, so `this` outlives it. One due
    // before the first read is started is left to the constructor.
    watch_ = watchdog.Arm("a ring stream", [this](const absl::Status& why) {
      {
        absl::MutexLock lock(&mu_);
        if (!reading_) {
          expired_early_ = why;
          return;
        }
      }
      if (ClaimFinish()) Finish(ToGrpcStatus(why));
    });
    StartRead(&message_);
    std::optional<absl::Status> expired;
    {
      absl::MutexLock lock(&mu_);
      reading_ = true;
      expired.swap(expired_early_);
    }
    if (expired.has_value() && ClaimFinish()) Finish(ToGrpcStatus(*expired));
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the sender closed or cancelled the stream, or this side ended it
      watch_.Pause();
      inbox_.StreamEnded(stream_id_);
      if (!ClaimFinish()) return;
      proto::RingStreamSummary summary;
      summary.set_segments_accepted(accepted_);
      bool own_buffer = false;
      grpc::SerializationTraits<proto::RingStreamSummary>::Serialize(summary, summary_,
                                                                     &own_buffer);
      Finish(grpc::Status::OK);
      return;
    }
    watch_.Touch();
    absl::StatusOr<Segment> segment = DecodeSegment(message_);
    absl::Status status = segment.status();
    if (status.ok()) status = Authorize(segment->header);
    if (status.ok()) status = inbox_.Accept(*std::move(segment), stream_id_);
    if (!status.ok()) {
      if (ClaimFinish()) Finish(ToGrpcStatus(status));
      return;
    }
    ++accepted_;
    message_.Clear();
    StartRead(&message_);
  }

  void OnDone() override {
    watch_.Disarm();  // no expiry runs from now on
    delete this;
  }

 private:
  // True for the one caller that may finish the stream.
  bool ClaimFinish() {
    absl::MutexLock lock(&mu_);
    return !std::exchange(finished_, true);
  }

  // The segments must be what the call's link key claimed (a static ring's call may claim none).
  absl::Status Authorize(const SegmentHeader& header) const {
    if ((claim_.has_generation && header.generation != claim_.generation) ||
        (claim_.rank >= 0 && header.sender_rank != claim_.rank)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "a segment of ", WorkerName(header.sender_rank), " in generation ", header.generation,
          " on a stream whose link key claims ", WorkerName(claim_.rank), " in generation ",
          claim_.generation, "; a ring stream carries one sender's one generation"));
    }
    return absl::OkStatus();
  }

  RingInbox& inbox_;
  grpc::ByteBuffer* summary_;
  const uint64_t stream_id_;
  const LinkClaim claim_;  // what the sender's link key said, checked when the call started
  StreamAdmission::Ticket ticket_;
  StreamWatchdog::Watch watch_;
  grpc::ByteBuffer message_;
  uint64_t accepted_ = 0;
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;  // the constructor has started the first read
  std::optional<absl::Status> expired_early_ ABSL_GUARDED_BY(mu_);  // a deadline before that
};

// A stream refused when its call starts: nothing of it is read.
class RefusedStream final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const absl::Status& why) { Finish(ToGrpcStatus(why)); }
  void OnDone() override { delete this; }
};

}  // namespace

RingPeerService::RingPeerService(RingInbox& inbox, StreamLimits limits)
    : inbox_(inbox), admission_(limits), watchdog_(limits) {}

absl::StatusOr<LinkClaim> RingPeerService::Authenticate(const grpc::CallbackServerContext& context,
                                                        std::string& peer) const {
  ASSIGN_OR_RETURN(LinkClaim claim, ReadLinkClaim(context));
  std::string credential;
  {
    absl::MutexLock lock(&mu_);
    credential = credential_;
  }
  if (credential.empty()) {  // a static ring: mutual TLS only, and the claim proves nothing
    peer = PeerOfCall(context);
    return claim;
  }
  if (!claim.has_generation || claim.rank < 0) {
    return absl::PermissionDeniedError(
        "a ring stream must claim its generation and sender rank in its metadata beside its "
        "link key; refused before anything was read");
  }
  if (!SecretsEqual(claim.key, RingLinkKey(credential, claim.generation, claim.rank))) {
    return absl::PermissionDeniedError(
        absl::StrCat("this stream's link key does not make it the link of ", WorkerName(claim.rank),
                     " in generation ", claim.generation, " to this worker; refused"));
  }
  peer = WorkerName(claim.rank);  // the key proved it: bounded per sender
  return claim;
}

grpc::ServerReadReactor<grpc::ByteBuffer>* RingPeerService::Stream(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* summary) {
  // Before anything is read: who the sender is, then whether it may hold one more stream.
  std::string peer;
  absl::StatusOr<LinkClaim> claim = Authenticate(*context, peer);
  if (!claim.ok()) return new RefusedStream(claim.status());
  absl::StatusOr<StreamAdmission::Ticket> ticket = admission_.Admit(peer, "ring streams");
  if (!ticket.ok()) return new RefusedStream(ticket.status());
  return new StreamReactor(inbox_, summary, *std::move(claim), *std::move(ticket), watchdog_);
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
       LinkClaim claim)
      : address(std::move(address)),
        peer_name(std::move(peer_name)),
        on_error(std::move(on_error)),
        wire(wire),
        claim(std::move(claim)) {}

  const std::string address;
  const std::string peer_name;
  const std::function<void(const absl::Status&)> on_error;
  prometheus::Counter* const wire;
  const LinkClaim claim;  // presented on every stream (its key may be empty: none)

  absl::Mutex mu;
  std::deque<grpc::ByteBuffer> queue ABSL_GUARDED_BY(mu);  // encoded segments, not yet written
  std::shared_ptr<Stream> stream ABSL_GUARDED_BY(mu);      // of the current epoch, if open
  bool stopping ABSL_GUARDED_BY(mu) = false;
  uint64_t epoch ABSL_GUARDED_BY(mu) = 0;
  absl::Status error ABSL_GUARDED_BY(mu);
  int live_streams ABSL_GUARDED_BY(mu) = 0;  // Stream objects not yet destroyed
  uint64_t written ABSL_GUARDED_BY(mu) = 0;  // segments whose write completed
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
    AddLinkClaim(*context_, this->link->claim);
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
      if (ok) ++link->written;
      if (!ok) ended = lost_write = true;
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
      // The receiver ended a stream that had been idle past its limit (StreamWatchdog) with
      // nothing lost: not a failure; the next segment opens a fresh stream.
      const bool idle_end = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
                            !lost_write && link->queue.empty();
      if (epoch == link->epoch && !link->stopping && !closing && !idle_end) {
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
  bool writing = false;     // a write of `in_flight` is in flight (or about to be started)
  bool ended = false;       // a write failed or the peer ended the call: no more writes
  bool held = true;         // the hold taken in Start()
  bool closing = false;     // this side half-closed the call (WritesDone): a graceful end
  bool done = false;        // OnDone has run
  bool lost_write = false;  // a write failed: a segment may not have reached the peer
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
                                   LinkClaim claim)
    : link_(std::make_shared<Link>(address, std::move(peer_name), std::move(on_error), wire,
                                   std::move(claim))),
      channel_(MakeChannel(address, security)),
      stub_(channel_) {}

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

bool RingStreamSender::stream_open() const {
  absl::MutexLock lock(&link_->mu);
  return link_->stream != nullptr;
}

std::string RingStreamSender::Describe() const {
  const char* state = "unknown";
  switch (channel_->GetState(/*try_to_connect=*/false)) {
    case GRPC_CHANNEL_IDLE:
      state = "idle";
      break;
    case GRPC_CHANNEL_CONNECTING:
      state = "connecting";
      break;
    case GRPC_CHANNEL_READY:
      state = "ready";
      break;
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      state = "failing to connect";
      break;
    case GRPC_CHANNEL_SHUTDOWN:
      state = "shut down";
      break;
  }
  absl::MutexLock lock(&link_->mu);
  const bool in_flight = link_->stream != nullptr && link_->stream->writing;
  return absl::StrCat("this worker's link to ", link_->peer_name, " (", link_->address, ") is ",
                      state, "; segments written: ", link_->written,
                      ", not yet written: ", link_->queue.size() + (in_flight ? 1 : 0));
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
          LinkClaim{std::move(link_key), topology.generation, topology.rank, true}) {}

absl::StatusOr<Segment> GrpcRingTransport::Receive(uint64_t collective, absl::Time deadline) {
  absl::StatusOr<Segment> segment = inbox_.Next(collective, deadline);
  if (segment.status().code() != absl::StatusCode::kDeadlineExceeded) return segment;
  return absl::DeadlineExceededError(
      absl::StrCat(segment.status().message(), " (", sender_.Describe(), ")"));
}

absl::Status GrpcRingTransport::SendFilled(const SegmentHeader& header, size_t payload_bytes,
                                           absl::FunctionRef<void(char*)> fill) {
  return sender_.Enqueue(EncodeFilledSegment(header, payload_bytes, fill));
}

absl::Status GrpcRingTransport::Forward(const SegmentHeader& header,
                                        const SegmentPayload& payload) {
  return sender_.Enqueue(EncodeForwardedSegment(header, payload));
}

}  // namespace ringside::ring
