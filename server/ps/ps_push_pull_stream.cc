// The ParameterShard service's PushPull streams (ps_service.h), bounded staleness, async and
// backup workers: one reactor per worker, shard and step that hands the worker's gradient share,
// segment by segment, to the generation's push-pull shard (Shard::push_pull), and once the shard
// lets the worker start its next step streams the range's parameters back. The answer comes on the
// shard's applier thread, off any reaction, and may race with a reaction that ends the stream (the
// worker cancelling): every write and the Finish go through ReactorWrites
// (common/reactor_writes.h), as in Step's.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/reactor_writes.h"
#include "common/status_macros.h"
#include "server/ps/ps_refusals.h"
#include "server/ps/ps_service.h"
#include "server/ps/push_stream_reactor.h"

namespace ringside::server {
namespace {

using PushPullBase = grpc::ServerBidiReactor<proto::PsGradientPush, proto::PsPulledValues>;

class PushPullReactor final
    : public PushStreamReactor<PushPullReactor, proto::PsGradientPush, proto::PsPulledValues> {
 public:
  // `claim`: what the call's link key (checked already) says it is.
  PushPullReactor(grpc::CallbackServerContext* context, const ParameterShardService& service,
                  LinkClaim claim, uint64_t segment_elements)
      : PushStreamReactor(context),
        service_(service),
        claim_(std::move(claim)),
        segment_elements_(segment_elements) {}

  // PushStreamReactor's protocol.
  void OnReadsEnded(bool cancelled) {
    if (cancelled) {
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "push cancelled by the worker"));
      if (began_) shard_->AbandonPush(worker_, step_);
    } else {
      CompletePush();
    }
  }

  bool OnMessage() {
    absl::Status status = began_ ? CheckSameStream() : Begin();
    if (status.ok()) status = AddSegment();
    if (!status.ok()) {
      FinishOnce(ToGrpcStatus(status));
      if (began_) shard_->AbandonPush(worker_, step_);
      return false;
    }
    return true;
  }

  void OnWritten() {
    CountSent();
    WriteNext();
  }

  void OnStreamDone() {}
  void OnFinishDeferred() {}

 private:
  // The first segment: the assigned worker's, of this generation and range. Sizes the share.
  absl::Status Begin() {
    RETURN_IF_ERROR(ParameterShardService::CheckClaimed(claim_, in().generation(),
                                                        static_cast<int>(in().worker_rank())));
    // Only now does the stream hold a generation: one that never pushes holds none.
    generation_ = service_.current();
    if (generation_ == nullptr) return FromGrpcStatus(NothingServed());
    shard_ = generation_->shard->push_pull();
    if (shard_ == nullptr) return FromGrpcStatus(SynchronousGeneration());
    // A rank past int's range turns negative, which the shard refuses.
    RETURN_IF_ERROR(shard_->BeginPush(in().generation(), static_cast<int>(in().worker_rank()),
                                      in().step(), in().read_version(), in().range_elements()));
    began_ = true;
    worker_ = static_cast<int>(in().worker_rank());
    step_ = in().step();
    read_version_ = in().read_version();
    return absl::OkStatus();
  }

  absl::Status CheckSameStream() const {
    if (in().worker_rank() != static_cast<uint32_t>(worker_) || in().step() != step_ ||
        in().generation() != shard_->check().identity().generation ||
        in().read_version() != read_version_ || in().range_elements() != shard_->range_elements()) {
      return absl::InvalidArgumentError("a push stream carries one worker's share of one step");
    }
    return absl::OkStatus();
  }

  // The shard keeps the payload as received (the message's string, moved, not copied) until its
  // applier decodes the whole share.
  absl::Status AddSegment() {
    auto payload = std::make_shared<const std::string>(std::move(*in().mutable_payload()));
    const absl::string_view bytes = *payload;
    RETURN_IF_ERROR(shard_->AddSegment(worker_, step_, in().offset(), {bytes}, payload));
    const ShardLinkMetrics& links = generation_->links;
    if (static_cast<size_t>(worker_) < links.from_worker.size() &&
        links.from_worker[worker_].bytes != nullptr) {
      links.from_worker[worker_].bytes->Increment(static_cast<double>(bytes.size()));
    }
    return absl::OkStatus();
  }

  // The half-close: the whole share is handed to the shard, then the pull waits for the
  // consistency policy.
  void CompletePush() {
    const absl::Status status =
        began_ ? shard_->FinishPush(worker_, step_)
               : absl::InvalidArgumentError("a push stream ended before its first segment");
    if (!status.ok()) {
      FinishOnce(ToGrpcStatus(status));
      if (began_) shard_->AbandonPush(worker_, step_);
      return;
    }
    shard_->WhenMayStart(worker_, step_ + 1,
                         [weak = weak_from_this()](absl::StatusOr<PushPullRead> read) {
                           if (auto self = weak.lock()) self->OnMayStart(std::move(read));
                         });
  }

  void OnMayStart(absl::StatusOr<PushPullRead> read) {
    if (!read.ok()) {
      FinishOnce(ToGrpcStatus(read.status()));
      return;
    }
    {
      absl::MutexLock lock(&mutex());
      read_ = *std::move(read);
    }
    WriteNext();
  }

  // The next segment of the parameters, or the end. Empty ranges get one empty segment.
  void WriteNext() {
    bool done = false;
    writes().StartWrite([&]() -> const proto::PsPulledValues* {
      mutex().AssertHeld();
      const std::vector<float>& values = *read_.values;
      if (written_ > 0 && sent_ >= values.size()) {
        done = true;
        return nullptr;
      }
      const uint64_t count = std::min<uint64_t>(segment_elements_, values.size() - sent_);
      out_.set_version(read_.version);
      out_.set_slowest_completed(read_.slowest_completed);
      out_.set_offset(sent_);
      out_.set_range_elements(values.size());
      out_.set_payload(reinterpret_cast<const char*>(values.data() + sent_), count * sizeof(float));
      sent_ += count;
      ++written_;
      return &out_;
    });
    if (done) FinishOnce(grpc::Status::OK);
  }

  // Per write done; the first also counts the cost model's bytes (the range, once per step).
  void CountSent() {
    const ShardLinkMetrics& links = generation_->links;
    if (static_cast<size_t>(worker_) >= links.to_worker.size()) return;
    const LinkSendMetrics& link = links.to_worker[worker_];
    if (link.bytes != nullptr) link.bytes->Increment(static_cast<double>(out_.payload().size()));
    if (link.messages != nullptr) link.messages->Increment();
    if (!counted_expected_ && link.expected_bytes != nullptr) {
      link.expected_bytes->Increment(static_cast<double>(shard_->range_elements() * sizeof(float)));
    }
    counted_expected_ = true;
  }

  const ParameterShardService& service_;
  const LinkClaim claim_;  // the call's, its key checked when it started (AdmitPush)
  // From the first message on (Begin); the generation keeps the shard alive.
  std::shared_ptr<const ShardGeneration> generation_;
  PushPullShard* shard_ = nullptr;
  const uint64_t segment_elements_;
  // Read side: touched only by the reactions reading, in order, before the push is handed over.
  bool began_ = false;
  int worker_ = 0;
  uint64_t step_ = 0;
  uint64_t read_version_ = 0;

  PushPullRead read_ ABSL_GUARDED_BY(mutex());
  uint64_t sent_ ABSL_GUARDED_BY(mutex()) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mutex()) = 0;
  proto::PsPulledValues out_;      // the write in flight, filled under mutex()
  bool counted_expected_ = false;  // OnWritten's only
};

class RefusedPushPull final : public PushPullBase {
 public:
  explicit RefusedPushPull(const grpc::Status& why) { Finish(why); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<proto::PsGradientPush, proto::PsPulledValues>*
ParameterShardService::PushPull(grpc::CallbackServerContext* context) {
  // Before anything is read: who the caller is, then whether it may hold one more stream.
  absl::StatusOr<PushAdmission> admission = AdmitPush(*context, "PushPull streams");
  if (!admission.ok()) return new RefusedPushPull(ToGrpcStatus(admission.status()));
  {
    // Looked at, not held: the stream takes the generation with its first message.
    std::shared_ptr<const ShardGeneration> generation = current();
    if (generation == nullptr) return new RefusedPushPull(NothingServed());
    if (generation->shard->push_pull() == nullptr) {
      return new RefusedPushPull(SynchronousGeneration());
    }
  }
  return PushPullReactor::Start(std::make_shared<PushPullReactor>(
                                    context, *this, std::move(admission->claim), segment_elements_),
                                std::move(admission->ticket), watchdog_, "a PushPull stream");
}

}  // namespace ringside::server
