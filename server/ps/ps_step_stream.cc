// The ParameterShard service's Step streams (ps_service.h): one reactor per worker, shard and
// step that reads the worker's share and, at the same time, streams the step's sum back as the
// shard's applier makes each part of it final.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/compression.h"
#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/payload_codec.h"
#include "common/reactor_writes.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "server/ps/ps_refusals.h"
#include "server/ps/ps_service.h"
#include "server/ps/push_stream_reactor.h"

namespace ringside::server {
namespace {

// Streams a step's sum as it becomes final (ShardState::WhenSummed): segments of at most
// `segment_elements` from the part known so far; an empty range gets one empty segment. A step
// pushed `descending` is known, and answered, from the range's end: counts are from there. A
// compressed step's segments are its pushes' (Summed.encoded), each sent as the applier encoded
// it.
class SumWriter {
 public:
  // The sum's values are rounded to `dtype` already (ShardState): encoding them is exact.
  SumWriter(uint64_t step, uint64_t range_elements, uint64_t segment_elements, WireDtype dtype,
            bool descending)
      : step_(step),
        range_elements_(range_elements),
        segment_elements_(segment_elements),
        dtype_(dtype),
        descending_(descending) {}

  // More of the sum is final: `end` elements of `sum` (from the range's end when descending).
  void Known(Summed summed) {
    sum_ = std::move(summed.sum);
    if (summed.encoded != nullptr) encoded_ = std::move(summed.encoded);
    known_ = summed.end;
  }
  // The cost model's bytes of the whole reply, once something is known.
  uint64_t ExpectedBytes() const {
    if (encoded_ == nullptr) return PsBytesPerShardLink(range_elements_, 1, 0, dtype_);
    return CompressedLinkBytes(*encoded_->codec->codec,
                               SegmentLengths(range_elements_, encoded_->segment_elements));
  }
  // The next segment of the known part, a PsRangeValues message, into `out` and its payload's
  // size into `payload_bytes`; false when there is none (yet).
  bool Next(grpc::ByteBuffer& out, uint64_t& payload_bytes) {
    if (sent_ == known_ && (wrote_any_ || known_ != range_elements_)) return false;
    if (encoded_ != nullptr) return NextEncoded(out, payload_bytes);
    const uint64_t count = std::min<uint64_t>(segment_elements_, known_ - sent_);
    const uint64_t offset = descending_ ? range_elements_ - sent_ - count : sent_;
    proto::PsRangeValues header;
    header.set_step(step_);
    header.set_offset(offset);
    header.set_range_elements(range_elements_);
    if (dtype_ != WireDtype::kFp32) header.set_dtype(WireDtypeNumber(dtype_));
    const size_t width = WireBytesPerElement(dtype_);
    payload_bytes = count * width;
    out = EncodeWithPayload(
        header, proto::PsRangeValues::kPayloadFieldNumber, payload_bytes, [&](char* payload) {
          // The sum is a ring of slots (shard_state.h): the segment may wrap.
          ForEachRingRun(offset, offset + count, sum_->size(),
                         [&](uint64_t element, uint64_t slot, uint64_t length) {
                           EncodeWire(dtype_, absl::MakeConstSpan(*sum_).subspan(slot, length),
                                      payload + (element - offset) * width);
                         });
        });
    sent_ += count;
    wrote_any_ = true;
    // The last segment is in `out`: the shard may sum its next step into this buffer (ShardState
    // reuses a sum nobody holds), and the worker can begin that step only after reading this.
    if (sent_ == range_elements_) sum_ = nullptr;
    return true;
  }
  bool done() const { return wrote_any_ && sent_ == range_elements_; }
  uint64_t sent() const { return sent_; }

 private:
  // A compressed step's next segment: the applier's encoding of it. The part known ends on a
  // segment's end (shard_state.h), so it is whole.
  bool NextEncoded(grpc::ByteBuffer& out, uint64_t& payload_bytes) {
    const uint64_t length = encoded_->segment_elements;
    const uint64_t count = std::min<uint64_t>(length, known_ - sent_);
    const std::string& payload = encoded_->segments[sent_ / length];
    proto::PsRangeValues header;
    header.set_step(step_);
    header.set_offset(sent_);
    header.set_range_elements(range_elements_);
    header.set_compression(encoded_->codec->text);
    header.set_elements(count);
    payload_bytes = payload.size();
    out = EncodeWithPayload(header, proto::PsRangeValues::kPayloadFieldNumber, payload_bytes,
                            [&](char* wire) { payload.copy(wire, payload.size()); });
    sent_ += count;
    wrote_any_ = true;
    if (sent_ == range_elements_) sum_ = nullptr;  // as Next's
    return true;
  }

  const uint64_t step_;
  const uint64_t range_elements_;
  const uint64_t segment_elements_;
  const WireDtype dtype_;
  const bool descending_;
  Values sum_;
  std::shared_ptr<const EncodedReply> encoded_;  // a compressed step's; null: none
  uint64_t known_ = 0;
  uint64_t sent_ = 0;
  bool wrote_any_ = false;
};

// A push's wire dtype: absent (0) is float32, as before the field existed.
absl::StatusOr<WireDtype> PushDtype(const proto::PsPush& push) {
  if (push.dtype() == 0) return WireDtype::kFp32;
  return WireDtypeOfNumber(push.dtype());
}

// A push's codec: absent is none. Only a kind a server carries (top-k, sign).
absl::StatusOr<Compression> PushCompression(const proto::PsPush& push) {
  if (push.compression().empty()) return Compression{};
  constexpr size_t kLongestCompression = 32;  // "topk:" and a fraction's digits
  if (push.compression().size() > kLongestCompression) {
    return absl::InvalidArgumentError(
        absl::StrCat("a push's compression of ", push.compression().size(), " characters"));
  }
  ASSIGN_OR_RETURN(const Compression compression, ParseCompression(push.compression()));
  RETURN_IF_ERROR(CheckCompressionFitsMode(compression, SyncMode::kPs));
  return compression;
}

// One Step stream. Its reactions (gRPC's callback threads) read the share while the reply
// streams back: a part of the step's sum is written as soon as the shard's applier has made it
// final, so pushes and replies overlap. One write is in flight at a time; when the writer has
// sent everything known it asks the state for more (WhenSummed), and that answer, on the
// applier's thread, off any reaction, starts the next write, and may race with a reaction that
// ends the stream (the worker cancelling). So every write and the Finish go through
// ReactorWrites (common/reactor_writes.h), which leaves a Finish to the writing thread while that
// one is starting its write.
class StepReactor final
    : public PushStreamReactor<StepReactor, grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  using Hook = std::function<void(ParameterShardService::StepEvent, int worker)>;
  using Refusal = std::function<absl::Status(uint64_t generation, int worker, uint64_t step)>;

  // `claim`: what the call's link key (checked already) says it is. `hook` and `refusal`:
  // test-only (tests/support/ps_test_hooks.h), null in production.
  StepReactor(grpc::CallbackServerContext* context, const ParameterShardService& service,
              LinkClaim claim, uint64_t segment_elements, Hook hook, Refusal refusal)
      : PushStreamReactor(context),
        service_(service),
        claim_(std::move(claim)),
        segment_elements_(segment_elements),
        hook_(std::move(hook)),
        refusal_(std::move(refusal)) {}

  // PushStreamReactor's protocol.
  void OnReadsEnded(bool cancelled) {
    if (cancelled) {  // the worker went away mid-push
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "push cancelled by the worker"));
      if (began_) state_->AbandonPush(worker_, step_);
    } else {
      CompletePush();
    }
  }

  bool OnMessage() {
    const bool first = !began_;
    absl::StatusOr<ReceivedPayload> payload =
        DecodeWithPayload(in(), proto::PsPush::kPayloadFieldNumber, push_);
    absl::Status status = payload.status();
    if (status.ok()) status = first ? Begin(payload->size) : CheckSameStream();
    // The payload is summed from the received slices, which the state holds until then: nothing
    // of it is copied.
    if (status.ok() && compression_.kind != CompressionKind::kNone) {
      status = state_->AddCompressedSegment(worker_, step_, push_.offset(), push_.elements(),
                                            payload->pieces);
    } else if (status.ok()) {
      status = state_->AddSegment(worker_, step_, push_.offset(), std::move(payload->pieces),
                                  std::move(payload->owner));
    }
    if (!status.ok()) {
      // Finished first: if abandoning loses the step, this stream says why it ended itself.
      FinishOnce(ToGrpcStatus(status));
      if (began_) state_->AbandonPush(worker_, step_);
      return false;
    }
    if (hook_) hook_(ParameterShardService::StepEvent::kSegmentAdded, worker_);
    if (static_cast<size_t>(worker_) < metrics_->from_worker.size() &&
        metrics_->from_worker[worker_].bytes != nullptr) {
      metrics_->from_worker[worker_].bytes->Increment(static_cast<double>(payload->size));
    }
    if (first) WaitForSum(0);  // the reply streams from now on, as the sum becomes final
    return true;
  }

  void OnWritten() {
    CountSent();
    WriteNext();
  }

  void OnStreamDone() {
    if (hook_) hook_(ParameterShardService::StepEvent::kDone, worker_);
  }

  // The stream ended while a reply's write was being started: its Finish waits for it.
  void OnFinishDeferred() {
    if (hook_) hook_(ParameterShardService::StepEvent::kFinishDeferred, worker_);
  }

 private:
  // The first segment (of `payload_bytes`) opens the worker's share, once the push is the
  // assigned worker's.
  absl::Status Begin(uint64_t payload_bytes) {
    const int rank = static_cast<int>(push_.worker_rank());
    RETURN_IF_ERROR(ParameterShardService::CheckClaimed(claim_, push_.generation(), rank));
    if (refusal_) RETURN_IF_ERROR(refusal_(push_.generation(), rank, push_.step()));
    // Only now does the stream hold a generation: one that never pushes holds none.
    generation_ = service_.current();
    if (generation_ == nullptr) return FromGrpcStatus(NothingServed());
    state_ = generation_->shard->steps();
    if (state_ == nullptr) return FromGrpcStatus(PushPullGeneration());
    metrics_ = &generation_->links;
    ASSIGN_OR_RETURN(const WireDtype dtype, PushDtype(push_));
    ASSIGN_OR_RETURN(compression_, PushCompression(push_));
    RETURN_IF_ERROR(state_->BeginPush(push_.generation(), rank, push_.step(),
                                      push_.range_elements(), dtype, push_.descending(),
                                      compression_));
    began_ = true;
    worker_ = rank;
    step_ = push_.step();
    wire_ = dtype;
    descending_ = push_.descending();
    // Answered at the grain the worker pushes at, in elements (at most the shard's own segment,
    // as many bytes per message as fp32's): a large reply write would hold the shard's link for
    // one worker while the others' pushes, which wait for their own replies (ps_client.h's
    // window), leave the other direction idle. Never below 1024 elements: a peer's tiny first
    // segment does not make the shard answer in crumbs.
    const uint64_t width = WireBytesPerElement(wire_);
    const uint64_t largest = std::max<uint64_t>(1, segment_elements_ * sizeof(float) / width);
    const uint64_t pushed = std::max<uint64_t>(1024, payload_bytes / width);
    absl::MutexLock lock(&mutex());
    writer_.emplace(step_, state_->range_elements(), std::min(largest, pushed), wire_, descending_);
    return absl::OkStatus();
  }

  absl::Status CheckSameStream() const {
    if (push_.worker_rank() != static_cast<uint32_t>(worker_) || push_.step() != step_ ||
        push_.generation() != state_->config().generation) {
      return absl::InvalidArgumentError("a push stream carries one worker's share of one step");
    }
    absl::StatusOr<WireDtype> dtype = PushDtype(push_);
    absl::StatusOr<Compression> compression = PushCompression(push_);
    if (!dtype.ok() || *dtype != wire_ || push_.descending() != descending_ || !compression.ok() ||
        *compression != compression_) {
      return absl::InvalidArgumentError(
          "a push stream carries its share in one dtype, compression and order");
    }
    return absl::OkStatus();
  }

  void CompletePush() {
    if (!began_) {
      FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no gradient was pushed"));
      return;
    }
    absl::Status status = state_->FinishPush(worker_, step_);
    if (!status.ok()) {
      FinishOnce(ToGrpcStatus(status));
      state_->AbandonPush(worker_, step_);
      return;
    }
    if (hook_) hook_(ParameterShardService::StepEvent::kPushed, worker_);
  }

  // Asks for more of the sum than the `after` elements written; the answer may come at once,
  // on this thread.
  void WaitForSum(uint64_t after) {
    state_->WhenSummed(step_, after, [weak = weak_from_this()](Summed summed) {
      if (std::shared_ptr<StepReactor> self = weak.lock()) self->OnSummed(std::move(summed));
    });
  }

  // More of the sum is final (or the step will never be answered): starts the next write, on
  // whatever thread the state answers. Safe off a reaction: a write is started only on a stream
  // nobody has finished, and a Finish wanted meanwhile waits for it (ReactorWrites).
  void OnSummed(Summed summed) {
    if (summed.sum == nullptr) {
      FinishOnce(ToGrpcStatus(summed.ended));
      return;
    }
    bool first = false;
    uint64_t sent = 0, expected = 0;
    writes().StartWrite(
        [&]() -> const grpc::ByteBuffer* {
          mutex().AssertHeld();  // ReactorWrites runs it under the reactor's mutex
          writer_->Known(std::move(summed));
          // Nothing new cannot happen: WhenSummed said there is more.
          if (!writer_->Next(out_, out_payload_bytes_)) return nullptr;
          first = !std::exchange(reply_started_, true);
          sent = writer_->sent();
          expected = writer_->ExpectedBytes();
          return &out_;
        },
        [&] {
          if (first) CountExpected(expected);
          state_->Answered(worker_, step_, sent);
          if (hook_) hook_(ParameterShardService::StepEvent::kReplyStarting, worker_);
        });
  }

  // Only from OnWriteDone: the next segment known, or a wait for more, or the end.
  void WriteNext() {
    bool done = false, wait = false;
    uint64_t sent = 0;
    writes().StartWrite(
        [&]() -> const grpc::ByteBuffer* {
          mutex().AssertHeld();
          done = writer_->done();
          if (done) return nullptr;
          const bool more = writer_->Next(out_, out_payload_bytes_);
          sent = writer_->sent();
          if (more) return &out_;
          wait = true;
          return nullptr;
        },
        // Before the write starts: the worker can push on only once it has read it.
        [&] { state_->Answered(worker_, step_, sent); });
    if (done) {
      FinishOnce(grpc::Status::OK);
    } else if (wait) {
      WaitForSum(sent);
    }
  }

  // The reply's first write: the cost model's bytes for the link (`bytes`), once per step.
  void CountExpected(uint64_t bytes) {
    if (static_cast<size_t>(worker_) >= metrics_->to_worker.size()) return;
    prometheus::Counter* expected = metrics_->to_worker[worker_].expected_bytes;
    if (expected != nullptr) expected->Increment(static_cast<double>(bytes));
  }

  void CountSent() {
    if (static_cast<size_t>(worker_) >= metrics_->to_worker.size()) return;
    const LinkSendMetrics& link = metrics_->to_worker[worker_];
    if (link.bytes != nullptr) link.bytes->Increment(static_cast<double>(out_payload_bytes_));
    if (link.messages != nullptr) link.messages->Increment();
  }

  const ParameterShardService& service_;
  const LinkClaim claim_;  // the call's, its key checked when it started (AdmitPush)
  // From the first message on (Begin); the generation keeps the state and the metrics alive.
  std::shared_ptr<const ShardGeneration> generation_;
  ShardState* state_ = nullptr;
  const ShardLinkMetrics* metrics_ = nullptr;
  const uint64_t segment_elements_;
  proto::PsPush push_;  // the message read's fields but the payload
  // Read-side state: touched only by OnReadDone; worker_ and step_ are set before the first
  // WhenSummed, which the write side follows.
  bool began_ = false;
  int worker_ = 0;
  uint64_t step_ = 0;
  WireDtype wire_ = WireDtype::kFp32;  // the share's, and so the reply's
  Compression compression_;            // likewise its codec
  bool descending_ = false;            // likewise its order

  std::optional<SumWriter> writer_ ABSL_GUARDED_BY(mutex());
  bool reply_started_ ABSL_GUARDED_BY(mutex()) = false;
  // The write in flight (a proto::PsRangeValues), one at a time, and its payload's size: filled by
  // prepare, under mutex().
  grpc::ByteBuffer out_;
  uint64_t out_payload_bytes_ = 0;
  const Hook hook_;        // test-only
  const Refusal refusal_;  // test-only
};

// A Step stream to a shard that has nothing to serve yet.
class RefusedStep final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStep(const grpc::Status& why) { Finish(why); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ParameterShardService::Step(
    grpc::CallbackServerContext* context) {
  // Before anything is read: who the caller is, then whether it may hold one more stream.
  absl::StatusOr<PushAdmission> admission = AdmitPush(*context, "Step streams");
  if (!admission.ok()) return new RefusedStep(ToGrpcStatus(admission.status()));
  if (current() == nullptr) return new RefusedStep(NothingServed());
  StepReactor::Hook hook;
  StepReactor::Refusal refusal;
  {
    absl::MutexLock lock(&mu_);
    hook = step_hook_;
    refusal = push_refusal_hook_;
  }
  return StepReactor::Start(
      std::make_shared<StepReactor>(context, *this, std::move(admission->claim), segment_elements_,
                                    std::move(hook), std::move(refusal)),
      std::move(admission->ticket), watchdog_, "a Step stream");
}

}  // namespace ringside::server
