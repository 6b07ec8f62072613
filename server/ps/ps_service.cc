#include "server/ps/ps_service.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "server/ps/ps_refusals.h"

namespace ringside::server {
namespace {

// Streams a range of values in segments: the parameters (GetParameters), copied a segment at a
// time by `read` (Shard::ParametersRead).
class RangeWriter {
 public:
  // Copies elements [offset, offset + out.size()) of the range.
  using Copy = std::function<absl::Status(uint64_t offset, absl::Span<float> out)>;

  RangeWriter(Copy read, uint64_t size, uint64_t step, uint64_t segment_elements)
      : read_(std::move(read)), size_(size), step_(step), segment_elements_(segment_elements) {}

  // The next segment into `out`; false when everything has been written or a copy failed
  // (status() says why). An empty range still gets one (empty) segment, so every reply says
  // which step it belongs to.
  bool Next(proto::PsRangeValues& out) {
    if (done_ || !status_.ok()) return false;
    const uint64_t count = std::min<uint64_t>(segment_elements_, size_ - offset_);
    out.set_step(step_);
    out.set_offset(offset_);
    out.set_range_elements(size_);
    std::string& payload = *out.mutable_payload();
    payload.resize(count * sizeof(float));
    status_ = read_(offset_, absl::MakeSpan(reinterpret_cast<float*>(payload.data()), count));
    if (!status_.ok()) return false;
    offset_ += count;
    done_ = offset_ >= size_;
    return true;
  }
  const absl::Status& status() const { return status_; }

 private:
  Copy read_;
  uint64_t size_;
  uint64_t step_;
  uint64_t segment_elements_;
  uint64_t offset_ = 0;
  bool done_ = false;
  absl::Status status_;
};

// Streams a shard's resumable state (ReadState) in segments of the Load layout.
class StateWriter {
 public:
  StateWriter(PushPullShard::Resumable resumable, const ElementRange& range, uint64_t served,
              uint64_t segment_elements)
      : step_(resumable.step),
        served_(served),
        range_(range),
        state_(std::move(resumable.state)),
        segment_elements_(segment_elements) {}

  // As RangeWriter's; the state is never empty (it holds the optimiser's step count at least).
  bool Next(proto::PsStateSegment& out) {
    if (offset_ >= state_.size() && offset_ > 0) return false;
    const uint64_t count = std::min<uint64_t>(segment_elements_, state_.size() - offset_);
    out.set_generation(served_);
    out.set_step(step_);
    out.set_range_begin(range_.begin);
    out.set_range_elements(range_.size());
    out.set_state_elements(state_.size());
    out.set_offset(offset_);
    out.set_payload(reinterpret_cast<const char*>(state_.data() + offset_), count * sizeof(float));
    offset_ += count;
    return true;
  }

  // Copying from the state never fails.
  absl::Status status() const { return absl::OkStatus(); }

 private:
  uint64_t step_;
  uint64_t served_;  // the generation the state was served in
  ElementRange range_;
  std::vector<float> state_;
  uint64_t segment_elements_;
  uint64_t offset_ = 0;
};

// A server stream of the segments `Writer` makes (RangeWriter, StateWriter), one write at a time.
// Made with its writer, or without and then given one (Start) or an error (Refuse) once, from any
// thread: nothing else writes or finishes the stream before that.
template <typename Message, typename Writer>
class SegmentsReactor final : public grpc::ServerWriteReactor<Message> {
 public:
  SegmentsReactor() = default;
  // `delivered`, if any, runs once gRPC is done with a stream that finished OK: every segment
  // written and the status sent.
  explicit SegmentsReactor(Writer writer, std::function<void()> delivered = nullptr)
      : delivered_(std::move(delivered)) {
    Start(std::move(writer));
  }
  void Start(Writer writer) {
    writer_.emplace(std::move(writer));
    WriteNext();
  }
  void Refuse(const grpc::Status& why) { this->Finish(why); }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      this->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "client stopped reading"));
      return;
    }
    WriteNext();
  }
  void OnDone() override {
    if (finished_ok_ && delivered_) delivered_();
    delete this;
  }

 private:
  void WriteNext() {
    if (writer_->Next(out_)) {
      this->StartWrite(&out_);
    } else {
      const grpc::Status status = ToGrpcStatus(writer_->status());
      finished_ok_ = status.ok();
      this->Finish(status);
    }
  }
  std::optional<Writer> writer_;
  Message out_;
  std::function<void()> delivered_;
  bool finished_ok_ = false;  // set before the Finish that leads to OnDone
};

using ParametersReactor = SegmentsReactor<proto::PsRangeValues, RangeWriter>;
using StateReactor = SegmentsReactor<proto::PsStateSegment, StateWriter>;

}  // namespace

ParameterShardService::ParameterShardService(uint64_t segment_bytes, ShardMetricsFactory metrics,
                                             StreamLimits limits)
    : segment_elements_(std::max<uint64_t>(1, segment_bytes / sizeof(float))),
      metrics_(std::move(metrics)),
      admission_(limits),
      watchdog_(limits) {}

void ParameterShardService::Serve(ShardGeneration generation) {
  std::shared_ptr<const ShardGeneration> previous;
  {
    absl::MutexLock lock(&mu_);
    previous =
        std::exchange(current_, std::make_shared<const ShardGeneration>(std::move(generation)));
  }
  CloseGeneration(previous);
}

void ParameterShardService::CloseGeneration(
    const std::shared_ptr<const ShardGeneration>& previous) {
  if (previous != nullptr) previous->shard->Close();
}

bool ParameterShardService::elastic() const {
  absl::MutexLock lock(&mu_);
  return !credential_.empty();
}

absl::StatusOr<ParameterShardService::PushAdmission> ParameterShardService::AdmitPush(
    const grpc::CallbackServerContext& context, const char* what) {
  PushAdmission admission;
  ASSIGN_OR_RETURN(admission.claim, ReadLinkClaim(context));
  std::string peer;
  if (elastic()) {
    const LinkClaim& claim = admission.claim;
    if (!claim.has_generation || claim.rank < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("a ", what,
                       " call must claim its generation and worker rank in its "
                       "metadata beside its link key; refused before anything was read"));
    }
    RETURN_IF_ERROR(CheckStepKey(claim.key, claim.generation, claim.rank));
    peer = WorkerName(claim.rank);  // the key proved it: bounded per worker
  } else {
    peer = PeerOfCall(context);
  }
  ASSIGN_OR_RETURN(admission.ticket, admission_.Admit(peer, what));
  return admission;
}

absl::Status ParameterShardService::CheckClaimed(const LinkClaim& claim, uint64_t generation,
                                                 int rank) {
  if ((claim.has_generation && claim.generation != generation) ||
      (claim.rank >= 0 && claim.rank != rank)) {
    return absl::PermissionDeniedError(
        absl::StrCat("a message of ", WorkerName(rank), " in generation ", generation,
                     " on a call whose link key claims ", WorkerName(claim.rank), " in generation ",
                     claim.generation, "; refused"));
  }
  return absl::OkStatus();
}

void ParameterShardService::SetMemberCredential(std::string credential) {
  absl::MutexLock lock(&mu_);
  credential_ = std::move(credential);
}

absl::Status ParameterShardService::CheckStepKey(absl::string_view presented, uint64_t generation,
                                                 int rank) const {
  absl::MutexLock lock(&mu_);
  if (credential_.empty() || SecretsEqual(presented, ShardStepKey(credential_, generation, rank))) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("the link key does not make this call ", WorkerName(rank), "'s of generation ",
                   generation, "; only a member the controller assigned may push"));
}

absl::Status ParameterShardService::CheckLoadKey(absl::string_view presented,
                                                 uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  if (credential_.empty() || SecretsEqual(presented, ShardLoadKey(credential_, generation))) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("the link key does not make this call worker-0's of generation ", generation,
                   "; only the member the controller designated may load or read a shard"));
}

absl::StatusOr<std::optional<uint64_t>> ParameterShardService::ParameterReadClaim(
    const grpc::ServerContextBase& context) const {
  if (!elastic()) return std::nullopt;
  ASSIGN_OR_RETURN(const LinkClaim claim, ReadLinkClaim(context));
  if (!claim.has_generation) {
    return absl::PermissionDeniedError(
        "a read of the parameters must claim its generation in its metadata beside its load key; "
        "refused before anything was said");
  }
  RETURN_IF_ERROR(CheckLoadKey(claim.key, claim.generation));
  return claim.generation;
}

void ParameterShardService::SetJob(ShardJob job) {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t generation = job.generation;
    job_ = std::move(job);
    auto waiting = std::stable_partition(
        assignment_waits_.begin(), assignment_waits_.end(),
        [generation](const AssignmentWait& wait) { return wait.generation > generation; });
    for (auto it = waiting; it != assignment_waits_.end(); ++it) {
      ready.push_back(std::move(it->resume));
    }
    assignment_waits_.erase(waiting, assignment_waits_.end());
  }
  // Outside the lock: a resumed Load checks its first segment against the job just set.
  for (const std::function<void()>& resume : ready) resume();
}

bool ParameterShardService::AwaitAssignment(uint64_t generation, const void* waiter,
                                            std::function<void()> resume) {
  absl::MutexLock lock(&mu_);
  // A static shard serves a generation of its own and is never assigned a job: no wait.
  const bool static_shard = !job_.has_value() && current_ != nullptr;
  if (static_shard || (job_.has_value() && job_->generation >= generation)) return false;
  assignment_waits_.push_back(AssignmentWait{waiter, generation, std::move(resume)});
  return true;
}

bool ParameterShardService::CancelAssignmentWait(const void* waiter) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(assignment_waits_.begin(), assignment_waits_.end(),
                         [waiter](const AssignmentWait& wait) { return wait.waiter == waiter; });
  if (it == assignment_waits_.end()) return false;
  assignment_waits_.erase(it);
  return true;
}

size_t ParameterShardService::loads_awaiting_assignment() const {
  absl::MutexLock lock(&mu_);
  return assignment_waits_.size();
}

std::shared_ptr<const ShardGeneration> ParameterShardService::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

grpc::ServerWriteReactor<proto::PsRangeValues>* ParameterShardService::GetParameters(
    grpc::CallbackServerContext* context, const proto::PsRangeRequest* /*request*/) {
  // The live model is the job's: only the generation's designated member reads it, and on an
  // elastic shard its load key and the generation it claims are checked before the shard says
  // anything, whether it serves a generation included.
  const absl::StatusOr<std::optional<uint64_t>> claimed = ParameterReadClaim(*context);
  if (!claimed.ok()) return new RefusedWrite<proto::PsRangeValues>(ToGrpcStatus(claimed.status()));
  std::shared_ptr<const ShardGeneration> generation = current();
  if (generation == nullptr) return new RefusedWrite<proto::PsRangeValues>();
  const ShardIdentity& served = generation->shard->identity();
  if (claimed->has_value() && **claimed != served.generation) {
    return new RefusedWrite<proto::PsRangeValues>(grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("a read of generation ", **claimed, "'s parameters from ",
                     PsShardName(served.shard), ", which serves ", served.generation)));
  }
  // The read begins when the shard can give one (never waited for on this thread) and copies a
  // segment at a time as the stream takes them. The shard answers every read, also when the step
  // is lost or the generation ends, so the stream always finishes.
  auto* reactor = new ParametersReactor();
  generation->shard->ReadParameters([reactor, segment_elements = segment_elements_](
                                        absl::StatusOr<Shard::ParametersRead> read) {
    if (!read.ok()) {
      reactor->Refuse(ToGrpcStatus(read.status()));
      return;
    }
    reactor->Start(RangeWriter(std::move(read->copy), read->size, read->step, segment_elements));
  });
  return reactor;
}

grpc::ServerWriteReactor<proto::PsStateSegment>* ParameterShardService::ReadState(
    grpc::CallbackServerContext* context, const proto::PsStateRequest* request) {
  // A later generation's rank 0 reads the state its workers left here: its own load key, checked
  // before the shard says anything, the generation it serves included.
  if (absl::Status status =
          CheckLoadKey(MetadataValue(*context, kLinkKeyMetadata), request->generation());
      !status.ok()) {
    return new RefusedWrite<proto::PsStateSegment>(ToGrpcStatus(status));
  }
  std::shared_ptr<const ShardGeneration> generation = current();
  if (generation == nullptr) return new RefusedWrite<proto::PsStateSegment>();
  const uint64_t served = generation->shard->identity().generation;
  if (request->generation() < served) {
    return new RefusedWrite<proto::PsStateSegment>(grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("a read for generation ", request->generation(), " of ",
                     PsShardName(generation->shard->identity().shard), ", which serves ", served)));
  }
  PushPullShard* const push_pull = generation->shard->push_pull();
  if (push_pull == nullptr) {
    return new RefusedWrite<proto::PsStateSegment>(
        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                     "this shard's generation runs synchronous steps: every worker holds the "
                     "job's state, not the shard"));
  }
  ElementRange range;
  {
    absl::MutexLock lock(&mu_);
    range = ServedRangeLocked(*generation, *push_pull);
  }
  if (hand_over_hook_ && request->generation() > served) hand_over_hook_();
  // A shard that left waits for this read to hand its range over (ps_daemon.cc).
  return new StateReactor(StateWriter(push_pull->ResumeState(), range, served, segment_elements_),
                          [this, reader = request->generation()] {
                            absl::MutexLock lock(&mu_);
                            state_read_by_ = std::max(state_read_by_, reader);
                          });
}

ElementRange ParameterShardService::ServedRangeLocked(const ShardGeneration& generation,
                                                      const PushPullShard& push_pull) const {
  if (generation.range.has_value()) return *generation.range;
  if (job_.has_value() && job_->range.size() == push_pull.range_elements()) return job_->range;
  return ElementRange{0, push_pull.range_elements()};
}

bool ParameterShardService::AwaitStateRead(uint64_t after, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto read = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return state_read_by_ > after; };
  return mu_.AwaitWithDeadline(absl::Condition(&read), deadline);
}

}  // namespace ringside::server
