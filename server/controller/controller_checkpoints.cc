// The Controller service's checkpoint RPCs (proto/controller.proto): rank 0 of the current
// generation uploads the job's state (PutCheckpoint), and any member of it reads the newest back
// when its regroup resumes from it (GetCheckpoint). An upload's caller is authenticated from the
// call's metadata before its first message is read, so a caller without a member's credential
// never has a payload buffered; every size is checked against the job's shape before anything
// is stored, so an upload can never make the controller allocate more than the job's own state.
// What else an upload must be is ControllerService::EnableCheckpoints's. The reactors only copy
// bounded segments; the keeper's writer thread does the disk I/O.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/state_pieces.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "server/controller/controller_service.h"

namespace ringside::server {
namespace {

constexpr uint64_t kSegmentElements = (uint64_t{1} << 20) / sizeof(float);

grpc::Status NoCheckpoints() {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      "this controller keeps no checkpoints; start it with --checkpoint_dir");
}

// Whether `member` may touch the job's checkpoint: a worker of the current generation, and for
// an upload, its rank 0 (one writer, so no two uploads race).
absl::Status CheckMember(const Membership& membership, uint64_t member, bool upload) {
  const std::optional<MemberAssignment> assignment = membership.AssignmentOf(member);
  if (!assignment.has_value() || assignment->rank < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("member ", member, " is not a worker of the current generation"));
  }
  if (upload && assignment->rank != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "member ", member, " is rank ", assignment->rank, "; only rank 0 uploads checkpoints"));
  }
  return absl::OkStatus();
}

// The uploading member, named and authenticated by the call's metadata (common/auth.h).
absl::StatusOr<uint64_t> UploaderOf(const grpc::CallbackServerContext& context,
                                    const ControllerService& service) {
  uint64_t member = 0;
  if (!absl::SimpleAtoi(MetadataValue(context, kMemberIdMetadata), &member)) {
    return absl::UnauthenticatedError(absl::StrCat("an upload names its member in metadata ",
                                                   kMemberIdMetadata, " beside its credential"));
  }
  RETURN_IF_ERROR(service.AuthenticateMember(context, member));
  RETURN_IF_ERROR(CheckMember(service.membership(), member, true));
  return member;
}

class PutReactor final : public grpc::ServerReadReactor<proto::CheckpointSegment> {
 public:
  // `ticket`: the upload's place among the controller's uploads, held until the call is done.
  PutReactor(grpc::CallbackServerContext* context, ControllerService& service,
             CheckpointKeeper& keeper, uint64_t member, StreamAdmission::Ticket ticket,
             proto::CheckpointReply* reply)
      : context_(context),
        service_(service),
        keeper_(keeper),
        member_(member),
        reply_(reply),
        ticket_(std::move(ticket)) {
    // A silent upload is cancelled (its uploader sees CANCELLED); ~Watch waits for an expiry in
    // progress, and the watch is the last member to go.
    watch_ = service.upload_watchdog().Arm(
        "a checkpoint upload", [this](const absl::Status& /*why*/) { context_->TryCancel(); });
    StartRead(&segment_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      watch_.Disarm();  // the rest is the controller's to do
      if (context_->IsCancelled()) return Finish(grpc::Status::CANCELLED);
      return Complete();
    }
    watch_.Touch();
    if (absl::Status status = Take(); !status.ok()) return Finish(ToGrpcStatus(status));
    StartRead(&segment_);
  }
  void OnDone() override { delete this; }

 private:
  absl::Status Take() {
    const CheckpointShape& shape = keeper_.shape();
    if (!began_) {
      if (segment_.member_id() != member_) {
        return absl::PermissionDeniedError(absl::StrCat("member ", member_,
                                                        " uploads a checkpoint in member ",
                                                        segment_.member_id(), "'s name"));
      }
      // Its own credential checked again: a member registered again since the call began has a
      // new one.
      RETURN_IF_ERROR(service_.AuthenticateMember(*context_, member_));
      RETURN_IF_ERROR(CheckMember(service_.membership(), member_, true));
      if (segment_.parameters() != shape.parameters ||
          segment_.state_elements() != shape.state_elements()) {
        return absl::InvalidArgumentError(
            absl::StrCat("a checkpoint of ", segment_.parameters(), " parameters and ",
                         segment_.state_elements(), " elements does not fit the job's ",
                         shape.parameters, " and ", shape.state_elements()));
      }
      if (segment_.step() <= keeper_.newest_step()) {
        return absl::FailedPreconditionError(
            absl::StrCat("step ", segment_.step(), " is not newer than the checkpoint held (step ",
                         keeper_.newest_step(), ")"));
      }
      const int64_t steps = service_.job().steps();
      if (steps > 0 && segment_.step() > static_cast<uint64_t>(steps)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "step ", segment_.step(), " is beyond the job's ", steps, " steps (--steps)"));
      }
      first_ = segment_;
      first_.clear_payload();
      // The job's own sizes, checked above; received straight into the two parts a checkpoint
      // keeps, so the upload is never held twice.
      parameters_.resize(shape.parameters);
      optimizer_state_.resize(shape.state_elements() - shape.parameters);
      began_ = true;
    } else if (segment_.member_id() != first_.member_id() || segment_.step() != first_.step() ||
               segment_.parameters() != first_.parameters() ||
               segment_.state_elements() != first_.state_elements()) {
      return absl::InvalidArgumentError("an upload carries one member's state of one step");
    }
    const std::string& payload = segment_.payload();
    const uint64_t count = payload.size() / sizeof(float);
    const uint64_t total = parameters_.size() + optimizer_state_.size();
    if (payload.size() % sizeof(float) != 0 || segment_.offset() != received_ ||
        count > total - received_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment at ", segment_.offset(), " of ", payload.size(),
          " bytes does not continue the upload at element ", received_, " of ", total));
    }
    // A segment may straddle the parameters' end.
    WriteStatePiece(received_, payload.data(), count, absl::MakeSpan(parameters_),
                    absl::MakeSpan(optimizer_state_));
    received_ += count;
    return absl::OkStatus();
  }

  void Complete() {
    const uint64_t total = parameters_.size() + optimizer_state_.size();
    if (!began_ || received_ != total) {
      return Finish(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("incomplete checkpoint: ", received_, " of ", total, " elements")));
    }
    const size_t non_finite = CountNonFinite(parameters_) + CountNonFinite(optimizer_state_);
    if (non_finite != 0) {
      service_.ReportNonFiniteCheckpoint(member_, first_.step(), non_finite);
      return Finish(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       absl::StrCat("the checkpoint of step ", first_.step(), " has ", non_finite,
                                    " of ", total, " values NaN or infinite; it is not kept")));
    }
    absl::StatusOr<uint64_t> accepted = service_.TakeCheckpoint(
        member_, first_.step(), std::move(parameters_), std::move(optimizer_state_));
    if (accepted.ok()) reply_->set_step(*accepted);
    Finish(ToGrpcStatus(accepted.status()));
  }

  grpc::CallbackServerContext* const context_;
  ControllerService& service_;
  CheckpointKeeper& keeper_;
  const uint64_t member_;
  proto::CheckpointReply* const reply_;
  proto::CheckpointSegment segment_;
  proto::CheckpointSegment first_;  // header fields of the upload
  bool began_ = false;
  std::vector<float> parameters_;
  std::vector<float> optimizer_state_;
  uint64_t received_ = 0;
  StreamAdmission::Ticket ticket_;
  StreamWatchdog::Watch watch_;  // last: gone (and any expiry done) before the rest
};

class GetReactor final : public grpc::ServerWriteReactor<proto::CheckpointSegment> {
 public:
  explicit GetReactor(std::shared_ptr<const Checkpoint> checkpoint)
      : checkpoint_(std::move(checkpoint)) {
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "reader went away"));
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    const uint64_t parameters = checkpoint_->parameters.size();
    const uint64_t total = parameters + checkpoint_->optimizer_state.size();
    if (offset_ >= total) return Finish(grpc::Status::OK);
    // Segments never straddle the two vectors, so each is one copy from one of them.
    const bool in_parameters = offset_ < parameters;
    const std::vector<float>& from =
        in_parameters ? checkpoint_->parameters : checkpoint_->optimizer_state;
    const uint64_t begin = in_parameters ? offset_ : offset_ - parameters;
    const uint64_t count = std::min<uint64_t>(kSegmentElements, from.size() - begin);
    out_.set_step(checkpoint_->step);
    out_.set_parameters(parameters);
    out_.set_state_elements(total);
    out_.set_offset(offset_);
    out_.set_payload(reinterpret_cast<const char*>(from.data() + begin), count * sizeof(float));
    offset_ += count;
    StartWrite(&out_);
  }

  const std::shared_ptr<const Checkpoint> checkpoint_;
  uint64_t offset_ = 0;
  proto::CheckpointSegment out_;
};

class Refused final : public grpc::ServerWriteReactor<proto::CheckpointSegment> {
 public:
  explicit Refused(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

class RefusedRead final : public grpc::ServerReadReactor<proto::CheckpointSegment> {
 public:
  explicit RefusedRead(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerReadReactor<proto::CheckpointSegment>* ControllerService::PutCheckpoint(
    grpc::CallbackServerContext* context, proto::CheckpointReply* reply) {
  if (keeper_ == nullptr) return new RefusedRead(NoCheckpoints());
  // Before the first read: a refused call's payload is never taken in.
  absl::StatusOr<uint64_t> member = UploaderOf(*context, *this);
  if (!member.ok()) return new RefusedRead(ToGrpcStatus(member.status()));
  absl::StatusOr<StreamAdmission::Ticket> ticket =
      upload_admission_.Admit(absl::StrCat("member ", *member), "checkpoint uploads");
  if (!ticket.ok()) return new RefusedRead(ToGrpcStatus(ticket.status()));
  return new PutReactor(context, *this, *keeper_, *member, *std::move(ticket), reply);
}

bool ControllerService::StepAccountedFor(uint64_t member, uint64_t step) const {
  const Topology topology = membership_.topology();
  for (uint64_t worker : topology.workers) {
    if (worker == member && topology.workers.size() > 1) continue;
    if (membership_.CompletedStepsOf(worker) + 1 >= step) return true;
  }
  return false;
}

absl::StatusOr<uint64_t> ControllerService::TakeCheckpoint(uint64_t member, uint64_t step,
                                                           std::vector<float> parameters,
                                                           std::vector<float> optimizer_state) {
  if (StepAccountedFor(member, step)) {
    {
      // Rank 0's latest upload replaces one held (a forged one from the future, say).
      absl::MutexLock lock(&held_mu_);
      held_.reset();
    }
    RETURN_IF_ERROR(keeper_->Accept(step, std::move(parameters), std::move(optimizer_state)));
    return step;
  }
  {
    absl::MutexLock lock(&held_mu_);
    held_ = HeldCheckpoint{member, step, std::move(parameters), std::move(optimizer_state)};
  }
  Log(absl::StrCat("controller: holding member ", member, "'s checkpoint of step ", step,
                   " until another worker reports the step before it"));
  AcceptHeldCheckpoint();  // a heartbeat may have come in meanwhile
  return 0;
}

void ControllerService::AcceptHeldCheckpoint() {
  if (keeper_ == nullptr) return;
  std::optional<HeldCheckpoint> held;
  {
    absl::MutexLock lock(&held_mu_);
    if (!held_.has_value() || !StepAccountedFor(held_->member, held_->step)) return;
    held.swap(held_);
  }
  const absl::Status accepted =
      keeper_->Accept(held->step, std::move(held->parameters), std::move(held->optimizer_state));
  Log(absl::StrCat("controller: member ", held->member, "'s checkpoint of step ", held->step,
                   accepted.ok() ? " is accounted for: kept"
                                 : absl::StrCat(" is not kept: ", accepted.message())));
}

void ControllerService::ReportNonFiniteCheckpoint(uint64_t member, uint64_t step,
                                                  size_t non_finite) {
  if (nonfinite_refused_ != nullptr) nonfinite_refused_->Increment();
  Log(absl::StrCat("controller: refused member ", member, "'s checkpoint of step ", step, ": ",
                   non_finite, " values NaN or infinite"));
}

grpc::ServerWriteReactor<proto::CheckpointSegment>* ControllerService::GetCheckpoint(
    grpc::CallbackServerContext* context, const proto::CheckpointRequest* request) {
  if (keeper_ == nullptr) return new Refused(NoCheckpoints());
  if (absl::Status status = AuthenticateMember(*context, request->member_id()); !status.ok()) {
    return new Refused(ToGrpcStatus(status));
  }
  if (absl::Status member = CheckMember(membership_, request->member_id(), false); !member.ok()) {
    return new Refused(ToGrpcStatus(member));
  }
  std::shared_ptr<const Checkpoint> newest = keeper_->newest();
  if (newest == nullptr || newest->step != request->step()) {
    return new Refused(grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        absl::StrCat("the controller holds no checkpoint of step ", request->step(),
                     newest == nullptr ? ""
                                       : absl::StrCat(" (its newest is step ", newest->step,
                                                      "); take the latest assignment"))));
  }
  return new GetReactor(std::move(newest));
}

}  // namespace ringside::server
