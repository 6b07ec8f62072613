// PsClient's Step streams (ps_client.h): one shard's part of one step as a gRPC callback
// reactor (ShardCall), and the calls of a step made, started (in order, or last part first as
// the backward pass releases it) and awaited.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "common/payload_codec.h"
#include "common/status_macros.h"
#include "server/ps/ps_client.h"
#include "server/ps/wire_share.h"

namespace ringside::server {
namespace {

constexpr char kStepMethod[] = "/ringside.proto.ParameterShard/Step";

// Pushes travel in segments of a quarter of the window (at most --segment_bytes): the shard sums
// and answers at that grain, so the last part of the reply trails the last push by little.
uint64_t PushSegmentElements(const PsClientOptions& options) {
  const uint64_t bytes = PsPushSegmentBytes(options.window_bytes, options.segment_bytes);
  return std::max<uint64_t>(1, bytes / WireBytesPerElement(options.wire_dtype));
}

uint64_t WindowElements(const PsClientOptions& options) {
  return std::max<uint64_t>(1, options.window_bytes / WireBytesPerElement(options.wire_dtype));
}

}  // namespace

// One shard's part of one step: a ParameterShard.Step stream as a gRPC callback reactor. It
// writes the share in segments, one write in flight, half-closes, and meanwhile reads the step's
// summed range back over the share as the shard streams it (the shard answers an element only
// once every share holds it, this one's included, so the reply overwrites only elements already
// copied into a message sent; the writes read further on, never the same elements), all from
// gRPC's callback threads; the thread running Sum() only starts it and waits for its end. The
// deadline and Cancel() end it through its context.
// Its messages are raw (common/payload_codec.h): a push's payload is written from the gradient
// straight into the slice gRPC sends, and a reply's read into the gradient straight from the
// slices gRPC received.
class PsClient::ShardCall final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `descending`: the share is pushed last part first, no further than Release() allows
  // (SumAsReady); else in order, all of it.
  // `compression`: this worker's error feedback over the shard's range when the step is
  // compressed, else null (an empty range is never compressed).
  ShardCall(const PsClientOptions& options, ShardLink& link, int shard, uint64_t step,
            absl::Span<float> gradient, bool descending, WorkerCompression* compression)
      : link_(link),
        shard_(shard),
        step_(step),
        gradient_(gradient),
        where_(absl::StrCat(PsShardName(shard), " (", link.address, ") step ", step)),
        wire_(options.wire_dtype),
        width_(WireBytesPerElement(options.wire_dtype)),
        segment_elements_(PushSegmentElements(options)),
        window_elements_(WindowElements(options)),
        window_full_(options.window_full),
        descending_(descending),
        released_(descending ? 0 : link.range.size()),
        compression_(link.range.size() > 0 ? compression : nullptr),
        compression_text_(compression_ != nullptr ? CompressionText(options.compression) : "") {
    SetDeadline(context_, options.timeout);
    context_.set_wait_for_ready(true);  // a shard still starting up is waited for
    // The key and what it claims, checked by the shard before it reads the push.
    AddLinkClaim(
        context_,
        LinkClaim{static_cast<size_t>(shard) < options.keys.size() ? options.keys[shard] : "",
                  options.generation, options.rank, true});
    push_.set_generation(options.generation);
    push_.set_worker_rank(static_cast<uint32_t>(options.rank));
    push_.set_step(step);
    push_.set_range_elements(link.range.size());
    // fp32 pushes leave the field out, as before it existed: the same bytes as ever.
    if (wire_ != WireDtype::kFp32) push_.set_dtype(WireDtypeNumber(wire_));
    if (descending_) push_.set_descending(true);
    if (compression_ != nullptr) push_.set_compression(compression_text_);
  }

  grpc::ClientContext& context() { return context_; }

  // A descending call starts with something released (or an empty range).
  void Start() {
    link_.raw_stub->PrepareBidiStreamingCall(&context_, kStepMethod, grpc::StubOptions(), this);
    // Release() starts writes from the caller's thread, outside gRPC's reactions: the hold keeps
    // the call from ending (OnDone) until the whole share is released or the step abandoned.
    if (descending_ && released() < link_.range.size()) {
      AddHold();
      held_ = true;
    }
    if (link_.send.expected_bytes != nullptr) link_.send.expected_bytes->Increment(ExpectedBytes());
    WriteSegment();  // an empty range still sends one (empty) segment
    StartRead(&reply_message_);
    StartCall();
  }

  // Descending: the last `elements` of the share are final and may be pushed (never fewer than
  // before). Caller's thread: the one that started the call.
  void Release(uint64_t elements) {
    bool resume = false;
    {
      absl::MutexLock lock(&window_mu_);
      released_ = std::max(released_, elements);
      resume = parked_ && MayWrite();
      if (resume) parked_ = false;
    }
    if (resume) WriteSegment();
    if (elements >= link_.range.size()) Unhold();
  }
  // No more Release(): the step was abandoned (after TryCancel) or the share is all released.
  void Unhold() {
    if (!held_) return;
    held_ = false;
    RemoveHold();
  }

  // Until the whole share is written and half-closed, or the stream has ended without.
  void WaitPushed() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &ShardCall::PushedOrDone));
  }

  // Until the stream has ended; then this shard's result of the step.
  absl::Status Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return result_;
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return;  // the shard ended the stream: its status (OnDone) says why
    if (link_.send.bytes != nullptr) {
      link_.send.bytes->Increment(static_cast<double>(writing_bytes_));
    }
    if (link_.send.messages != nullptr) link_.send.messages->Increment();
    bool write = false;
    {
      absl::MutexLock lock(&window_mu_);
      written_ += writing_;
      if (written_ == link_.range.size()) {
        write = false;
      } else if (MayWrite()) {
        write = true;
      } else {
        // The reply that lets it go on restarts it (OnReadDone), or the release of more of the
        // share (Release).
        parked_ = true;
        if (window_full_ && written_ < released_) window_full_(shard_, written_, received_);
        return;
      }
    }
    if (write) {
      WriteSegment();
    } else {
      StartWritesDone();
    }
  }

  void OnWritesDoneDone(bool /*ok*/) override {
    absl::MutexLock lock(&mu_);
    pushed_ = true;
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the reply is over; OnDone follows
    absl::StatusOr<ReceivedPayload> payload =
        DecodeWithPayload(reply_message_, proto::PsRangeValues::kPayloadFieldNumber, reply_);
    if (!payload.ok()) {
      reply_error_ = absl::InternalError(payload.status().message());
      context_.TryCancel();
      return;
    }
    const uint64_t received = Received();  // only this reaction changes it
    const absl::StatusOr<uint64_t> read =
        compression_ != nullptr ? ReadEncoded(*payload, received) : ReadPlain(*payload, received);
    if (!read.ok()) {
      reply_error_ = read.status();
      context_.TryCancel();
      return;
    }
    if (link_.receive.bytes != nullptr) {
      link_.receive.bytes->Increment(static_cast<double>(payload->size));
    }
    bool resume = false;
    {
      absl::MutexLock lock(&window_mu_);
      received_ += *read;
      resume = parked_ && MayWrite();
      if (resume) parked_ = false;
    }
    StartRead(&reply_message_);
    if (resume) WriteSegment();
  }

  // A reply segment of the sum in the wire dtype, read into the gradient after `received`
  // elements; how many elements it held.
  absl::StatusOr<uint64_t> ReadPlain(const ReceivedPayload& payload, uint64_t received) {
    const uint64_t size = link_.range.size();
    const uint64_t count = payload.size / width_;
    const uint32_t dtype = reply_.dtype() == 0 ? WireDtypeNumber(WireDtype::kFp32) : reply_.dtype();
    // Descending, each segment ends where the part received (from the range's end) begins.
    const uint64_t offset =
        descending_ ? size - received - std::min(count, size - received) : received;
    if (reply_.step() != step_ || reply_.range_elements() != size || reply_.offset() != offset ||
        dtype != WireDtypeNumber(wire_) || payload.size % width_ != 0 || count > size - received ||
        !reply_.compression().empty()) {
      return absl::InternalError(
          absl::StrCat("reply segment (step ", reply_.step(), ", offset ", reply_.offset(), ", ",
                       payload.size, " bytes of dtype ", dtype, ") does not continue the range at ",
                       received, " in ", WireDtypeName(wire_)));
    }
    // The payload holds `count` elements (checked above): the read cannot fall short.
    WirePiecesReader(wire_, payload.pieces)
        .Read(gradient_.subspan(link_.range.begin + offset, count), /*add=*/false);
    return count;
  }

  // A compressed step's reply segment: the next of the push's segments, decoded into the
  // gradient (checked whole first: a bad one is INTERNAL, the shard's fault).
  absl::StatusOr<uint64_t> ReadEncoded(const ReceivedPayload& payload, uint64_t received) {
    const uint64_t size = link_.range.size();
    const uint64_t count = std::min(segment_elements_, size - received);
    if (reply_.step() != step_ || reply_.range_elements() != size || reply_.offset() != received ||
        reply_.elements() != count || count == 0 || reply_.compression() != compression_text_) {
      return absl::InternalError(absl::StrCat(
          "compressed reply segment (step ", reply_.step(), ", offset ", reply_.offset(), ", ",
          reply_.elements(), " elements of ", reply_.compression(), ") is not the range's ", count,
          " at ", received, " in ", compression_text_));
    }
    std::string joined;
    const absl::Status decoded = compression_->DecodeReply(
        static_cast<int64_t>(step_), received, ContiguousBytes(payload.pieces, joined),
        gradient_.subspan(link_.range.begin + received, count));
    if (!decoded.ok()) return absl::InternalError(decoded.message());
    return count;
  }

  // The last reaction: every other one has returned, so the fields they wrote are final here.
  void OnDone(const grpc::Status& status) override {
    absl::Status result;
    const uint64_t received = Received();
    if (!reply_error_.ok()) {
      result = Annotate(reply_error_, where_);
    } else if (!status.ok()) {
      result = Annotate(FromGrpcStatus(status), where_);
    } else if (received != link_.range.size()) {
      result = absl::InternalError(absl::StrCat(where_, ": the shard returned ", received, " of ",
                                                link_.range.size(), " summed values"));
    }
    absl::MutexLock lock(&mu_);  // Wait() may destroy this as soon as it is released
    result_ = std::move(result);
    done_ = true;
  }

 private:
  bool PushedOrDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pushed_ || done_; }

  // The next segment may go: this worker is fewer than window_elements_ ahead of the sum, and
  // (descending) more of the share is released than written.
  bool MayWrite() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(window_mu_) {
    return written_ - received_ < window_elements_ && written_ < released_;
  }

  uint64_t released() {
    absl::MutexLock lock(&window_mu_);
    return released_;
  }

  uint64_t Received() {
    absl::MutexLock lock(&window_mu_);
    return received_;
  }

  // The cost model's bytes of this share (and of its reply, which is cut alike).
  double ExpectedBytes() const {
    const uint64_t size = link_.range.size();
    if (compression_ == nullptr) return static_cast<double>(PsBytesPerShardLink(size, 1, 0, wire_));
    return static_cast<double>(
        CompressedLinkBytes(compression_->codec(), SegmentLengths(size, segment_elements_)));
  }

  void WriteSegment() {
    uint64_t written = 0, released = 0;
    {
      absl::MutexLock lock(&window_mu_);
      written = written_;
      released = released_;
    }
    writing_ = std::min(segment_elements_, released - written);
    // Descending: the segment ends where the part written (from the range's end) begins.
    const uint64_t offset = descending_ ? link_.range.size() - written - writing_ : written;
    push_.set_offset(offset);
    const absl::Span<const float> values = gradient_.subspan(link_.range.begin + offset, writing_);
    if (compression_ != nullptr) {
      // The share's encoding under this worker's error feedback (its residual keeps the rest).
      const std::string encoded =
          compression_->EncodePush(static_cast<int64_t>(step_), offset, values);
      push_.set_elements(writing_);
      writing_bytes_ = encoded.size();
      sending_ = EncodeWithPayload(push_, proto::PsPush::kPayloadFieldNumber, writing_bytes_,
                                   [&](char* payload) { encoded.copy(payload, encoded.size()); });
    } else {
      writing_bytes_ = writing_ * width_;
      sending_ = EncodeWithPayload(push_, proto::PsPush::kPayloadFieldNumber, writing_bytes_,
                                   [&](char* payload) { EncodeWire(wire_, values, payload); });
    }
    StartWrite(&sending_);
  }

  ShardLink& link_;
  const int shard_;
  const uint64_t step_;
  const absl::Span<float> gradient_;  // the share out, then the sum in
  const std::string where_;
  const WireDtype wire_;
  const size_t width_;  // bytes per element on the wire
  const uint64_t segment_elements_;
  grpc::ClientContext context_;

  // The write side: one write at a time, started by Start(), OnWriteDone or (after a pause for
  // the window) OnReadDone.
  proto::PsPush push_;          // the pushes' fields but the payload
  grpc::ByteBuffer sending_;    // the write in flight, a proto::PsPush
  uint64_t writing_ = 0;        // elements of it
  uint64_t writing_bytes_ = 0;  // its payload's bytes

  // The read side: touched only by OnReadDone, then read by OnDone.
  grpc::ByteBuffer reply_message_;  // a proto::PsRangeValues as read
  proto::PsRangeValues reply_;      // its fields but the payload
  absl::Status reply_error_;

  // The push window: how far the writes may run ahead of the sum received.
  const uint64_t window_elements_;
  const std::function<void(int, uint64_t, uint64_t)> window_full_;
  absl::Mutex window_mu_;
  uint64_t written_ ABSL_GUARDED_BY(window_mu_) = 0;
  uint64_t received_ ABSL_GUARDED_BY(window_mu_) = 0;
  // A write waits for the sum to catch up, or (descending) for more of the share.
  bool parked_ ABSL_GUARDED_BY(window_mu_) = false;
  const bool descending_;
  uint64_t released_ ABSL_GUARDED_BY(window_mu_);  // elements that may be pushed
  bool held_ = false;  // a hold is outstanding (Start, Release and Unhold: the caller's thread)
  // The step's error feedback over the range when compressed; null: the wire dtype's values.
  WorkerCompression* const compression_;
  const std::string compression_text_;  // what its pushes and replies name; empty: none

  absl::Mutex mu_;
  bool pushed_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_ ABSL_GUARDED_BY(mu_);
};

std::vector<std::unique_ptr<PsClient::ShardCall>> PsClient::MakeCalls(int64_t step,
                                                                      absl::Span<float> gradient,
                                                                      bool descending,
                                                                      bool compressed) {
  std::vector<std::unique_ptr<ShardCall>> calls;
  calls.reserve(links_.size());
  for (size_t s = 0; s < links_.size(); ++s) {
    calls.push_back(std::make_unique<ShardCall>(options_, links_[s], static_cast<int>(s),
                                                static_cast<uint64_t>(step), gradient, descending,
                                                compressed ? feedback_[s].get() : nullptr));
    calls_.Track(calls.back()->context());
  }
  return calls;
}

absl::Status PsClient::Exchange(int64_t step, absl::Span<float> gradient) {
  std::vector<std::unique_ptr<ShardCall>> calls =
      MakeCalls(step, gradient, /*descending=*/false, Compresses(step));
  calls[0]->Start();
  if (options_.pushed_to_first_shard != nullptr) {
    calls[0]->WaitPushed();
    // A worker lost here (in-process tests) pushes nothing more: the other shards never see
    // its share, and its step ends CANCELLED.
    if (options_.pushed_to_first_shard(step)) Cancel();
  }
  for (size_t s = 1; s < calls.size(); ++s) calls[s]->Start();
  return AwaitCalls(step, calls, std::vector<bool>(calls.size(), true), /*abandoned=*/false);
}

absl::Status PsClient::ExchangeAsReady(int64_t step, absl::Span<float> gradient,
                                       const AwaitFinal& await_final) {
  std::vector<std::unique_ptr<ShardCall>> calls =
      MakeCalls(step, gradient, /*descending=*/true, /*compressed=*/false);
  std::vector<bool> started(calls.size(), false);
  bool fault_checked = options_.pushed_to_first_shard == nullptr;
  bool abandoned = false;
  // [ready, K) is final: each shard gets its part of it, the last shard first; a shard's stream
  // starts with its first part (or at once, for an empty range).
  for (uint64_t ready = gradient.size();;) {
    for (size_t s = calls.size(); s-- > 0;) {
      const ElementRange range = links_[s].range;
      const bool any_final = range.size() == 0 ? ready <= range.begin : ready < range.end;
      if (!any_final) continue;
      calls[s]->Release(range.end - std::max(ready, range.begin));
      if (!started[s]) calls[s]->Start();
      started[s] = true;
      if (!fault_checked && ready <= range.begin) {
        // The ps_push point: the first shard pushed to has the whole share, no other has all.
        fault_checked = true;
        calls[s]->WaitPushed();
        if (options_.pushed_to_first_shard(step)) Cancel();
      }
    }
    if (ready == 0) break;
    const std::optional<uint64_t> more = await_final(ready - 1);
    if (!more.has_value()) {
      abandoned = true;  // the compute failed: the streams begun end now
      break;
    }
    ready = *more;
  }
  return AwaitCalls(step, calls, started, abandoned);
}

absl::Status PsClient::AwaitCalls(int64_t step, std::vector<std::unique_ptr<ShardCall>>& calls,
                                  const std::vector<bool>& started, bool abandoned) {
  std::vector<absl::Status> statuses;
  for (size_t s = 0; s < calls.size(); ++s) {
    if (abandoned) calls[s]->context().TryCancel();
    calls[s]->Unhold();
    // A call never started has no stream to wait for.
    if (started[s]) statuses.push_back(calls[s]->Wait());
    calls_.Untrack(calls[s]->context());
  }
  if (abandoned) {
    return absl::CancelledError(
        absl::StrCat("step ", step, " abandoned before its share was final"));
  }
  for (const absl::Status& status : statuses) RETURN_IF_ERROR(status);
  return absl::OkStatus();
}

}  // namespace ringside::server
