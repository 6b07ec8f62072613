// The ParameterShard service's state hand-over (Load): an elastic job moving its parameters and
// optimiser state onto the shards when a ps-mode generation begins.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/state_pieces.h"
#include "common/status_macros.h"
#include "server/ps/ps_refusals.h"
#include "server/ps/ps_service.h"

namespace ringside::server {
namespace {

bool SameTransfer(const proto::PsStateSegment& a, const proto::PsStateSegment& b) {
  return a.generation() == b.generation() && a.workers() == b.workers() && a.step() == b.step() &&
         a.range_begin() == b.range_begin() && a.range_elements() == b.range_elements() &&
         a.state_elements() == b.state_elements();
}

// One Load stream. Its first segment, once its key is checked, waits for the shard's own
// assignment of the load's generation (ParameterShardService::AwaitAssignment) with no read
// pending, so nothing of the stream is read or stored meanwhile; SetJob's thread resumes it, off
// any reaction. Off a reaction only a call that nobody has finished is alive: the wait is taken
// back by exactly one of Resume (the assignment came) and OnCancel (the worker or the deadline
// ended the call), and whichever takes it makes the stream's next move. Like the push streams it
// is watched for silence (its first segment, then each next, must come in time; not while it
// waits for the assignment): a silent Load is cancelled (the worker sees CANCELLED, as for any
// call its server cancels; the shard counts it among its expired streams), and nothing of it is
// kept.
class LoadReactor final : public grpc::ServerReadReactor<proto::PsStateSegment> {
 public:
  using Hook = std::function<void(uint64_t generation)>;

  // `claim`: what the call's load key (checked already on an elastic shard) says it is;
  // `ticket`: its place among the shard's streams, held until the call is done.
  LoadReactor(grpc::CallbackServerContext* context, proto::PsLoadReply* reply,
              ParameterShardService& service, LinkClaim claim, StreamAdmission::Ticket ticket,
              Hook hook)
      : context_(context),
        reply_(reply),
        service_(service),
        claim_(std::move(claim)),
        ticket_(std::move(ticket)),
        load_(service),
        hook_(std::move(hook)) {
    // ~Watch waits for an expiry in progress, and the watch is the last member to go.
    watch_ = service_.watchdog().Arm("a Load stream", [this](const absl::Status& /*why*/) {
      context_->TryCancel();  // the reactions that follow finish the call
    });
    StartRead(&segment_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      watch_.Pause();  // half-closed (or gone): what remains is the shard's to do
      if (context_->IsCancelled()) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "load cancelled; nothing changed"));
      } else {
        const absl::Status finished = load_.Finish();
        reply_->set_step(load_.kept_step());
        Finish(ToGrpcStatus(finished));
      }
      return;
    }
    watch_.Touch();
    if (!checked_key_) {
      // Before anything is stored: the load must be the designated member's of its generation.
      checked_key_ = true;
      absl::Status status = ParameterShardService::CheckClaimed(claim_, segment_.generation(), -1);
      if (status.ok()) status = service_.CheckLoadKey(claim_.key, segment_.generation());
      if (!status.ok()) {
        Finish(ToGrpcStatus(status));
        return;
      }
      // Read before the wait: a Resume on another thread may start reading into segment_. The
      // reaction in progress keeps the call alive, so the hook may run after that Resume.
      const uint64_t generation = segment_.generation();
      if (AwaitAssignment(generation)) {
        if (hook_) hook_(generation);
        return;
      }
    }
    Continue();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      // Only a waiting load has no read pending, whose end would finish the stream.
      if (!waiting_ || !service_.CancelAssignmentWait(this)) return;
      waiting_ = false;
    }
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        "load cancelled while the shard waited for its assignment of the "
                        "generation; nothing changed"));
  }

  void OnDone() override { delete this; }

 private:
  // True when the stream now waits for the shard's assignment (Resume or OnCancel goes on).
  bool AwaitAssignment(uint64_t generation) {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return false;  // the read that Continue starts ends the stream
    waiting_ = service_.AwaitAssignment(generation, this, [this] { Resume(); });
    if (waiting_) watch_.Pause();  // waiting for the shard, not the worker
    return waiting_;
  }

  // On SetJob's thread, the wait taken back by it: nobody has finished the call, and no
  // reaction will while no read is pending, so the call is alive until this starts one.
  void Resume() {
    bool cancelled;
    {
      absl::MutexLock lock(&mu_);
      waiting_ = false;
      cancelled = cancelled_;
    }
    if (cancelled) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "load cancelled; nothing changed"));
      return;
    }
    watch_.Touch();  // the worker's turn again
    Continue();
  }

  // The segment in hand into the load, then the next read; the last thing either caller does
  // with the stream (a reaction may end it from then on).
  void Continue() {
    if (const absl::Status status = load_.Add(segment_); !status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    StartRead(&segment_);
  }

  grpc::CallbackServerContext* const context_;
  proto::PsLoadReply* const reply_;
  ParameterShardService& service_;
  const LinkClaim claim_;
  StreamAdmission::Ticket ticket_;
  bool checked_key_ = false;  // on the first segment (StateLoad keeps the generation unchanged)
  StateLoad load_;
  proto::PsStateSegment segment_;
  const Hook hook_;  // test-only

  absl::Mutex mu_;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;    // for the shard's assignment
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // OnCancel has run
  StreamWatchdog::Watch watch_;                  // last: gone (and any expiry done) before the rest
};

// A Load refused when its call starts: nothing of it is read.
class RefusedRead final : public grpc::ServerReadReactor<proto::PsStateSegment> {
 public:
  explicit RefusedRead(const grpc::Status& why) { Finish(why); }
  void OnDone() override { delete this; }
};

}  // namespace

absl::StatusOr<ShardJob> ParameterShardService::CheckLoad(
    const proto::PsStateSegment& first) const {
  absl::MutexLock lock(&mu_);
  return CheckLoadLocked(first);
}

absl::StatusOr<ShardJob> ParameterShardService::CheckLoadLocked(
    const proto::PsStateSegment& first) const {
  if (!job_.has_value()) {
    return absl::FailedPreconditionError(
        "this shard has no assignment from the controller yet, so it cannot check the state");
  }
  if (job_->generation < first.generation()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state for generation ", first.generation(), " but this shard's assignment is of ",
        job_->generation, ", which may have another shard map"));
  }
  if (first.range_begin() != job_->range.begin || first.range_elements() != job_->range.size()) {
    return absl::InvalidArgumentError(absl::StrCat("state for range [", first.range_begin(), ", ",
                                                   first.range_begin() + first.range_elements(),
                                                   ") but ", PsShardName(job_->shard), " owns [",
                                                   job_->range.begin, ", ", job_->range.end, ")"));
  }
  if (first.workers() < 1 || first.workers() > kMaxLoadWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a generation of ", first.workers(), " workers; a shard takes 1 to ", kMaxLoadWorkers));
  }
  if (current_ != nullptr && first.generation() < current_->shard->identity().generation) {
    return absl::FailedPreconditionError(absl::StrCat("state for generation ", first.generation(),
                                                      " but the shard already serves ",
                                                      current_->shard->identity().generation));
  }
  const uint64_t expected =
      job_->range.size() + Optimizer::StateSize(job_->optimizer.kind, job_->range.size());
  if (first.state_elements() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("state of ", first.state_elements(), " elements; this shard's range and ",
                     OptimizerName(job_->optimizer.kind), " state take ", expected));
  }
  return *job_;
}

absl::Status ParameterShardService::FinishLoad(const proto::PsStateSegment& first,
                                               std::vector<float> parameters, Optimizer optimizer) {
  // The job and the generation served may have changed while the state streamed in (the
  // controller's next assignment, another worker's Load): the state is checked against both
  // again before it is cut up, and once more when it replaces the generation served. The first
  // check passing means the sequence has the size the current job takes: CheckLoad sized it by
  // the same header.
  ShardJob job;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckLoadLocked(first).status());
    job = *job_;
  }
  // The state was imported into the optimiser of the job its first segment met, which may have
  // changed since.
  if (optimizer.config() != job.optimizer) {
    return absl::FailedPreconditionError(
        "the job's optimiser changed while the state streamed in; nothing changed");
  }
  const int workers = static_cast<int>(first.workers());  // at most kMaxLoadWorkers
  ShardGeneration generation;
  generation.range = job.range;
  ASSIGN_OR_RETURN(
      generation.shard,
      Shard::Resume(ShardSpec{first.generation(), workers, job.shard, job.optimizer, job.staleness,
                              job.backup_workers},
                    first.step(), std::move(parameters), std::move(optimizer), metrics_.shard));
  if (metrics_.links) generation.links = metrics_.links(job.shard, workers);
  std::shared_ptr<const ShardGeneration> previous;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckLoadLocked(first).status());
    if (job_->shard != job.shard) {
      return absl::FailedPreconditionError(
          absl::StrCat("the shard became ", PsShardName(job_->shard), " during a load for ",
                       PsShardName(job.shard), "; nothing changed"));
    }
    previous =
        std::exchange(current_, std::make_shared<const ShardGeneration>(std::move(generation)));
  }
  CloseGeneration(previous);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ParameterShardService::KeepServedState(
    const proto::PsStateSegment& first) {
  ShardJob job;
  std::shared_ptr<const ShardGeneration> served;
  PushPullShard* push_pull = nullptr;
  ElementRange range;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckLoadLocked(first).status());
    job = *job_;
    served = current_;
    push_pull = served == nullptr ? nullptr : served->shard->push_pull();
    if (push_pull != nullptr) range = ServedRangeLocked(*served, *push_pull);
  }
  const std::string shard = PsShardName(job.shard);
  if (push_pull == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(shard, served == nullptr ? " serves no generation" : " runs synchronous steps",
                     ": it holds no state of the job to keep; load it instead"));
  }
  if (range.begin != job.range.begin || range.end != job.range.end) {
    return absl::NotFoundError(absl::StrCat(shard, " served [", range.begin, ", ", range.end,
                                            "), not its range now [", job.range.begin, ", ",
                                            job.range.end, "): load it instead"));
  }
  // The state as a later generation would read it (ReadState), loaded as if it came over.
  PushPullShard::Resumable kept = push_pull->ResumeState();
  ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::Create(job.optimizer, range.size()));
  if (kept.state.size() != range.size() + optimizer.state_size()) {
    return absl::NotFoundError(
        absl::StrCat(shard, "'s state does not fit the job's optimiser: load it instead"));
  }
  // [steps, ...]: Adam's bias correction counts the steps resumed at, as after a whole read.
  const uint64_t step = std::max(kept.step, first.step());
  kept.state[range.size()] = static_cast<float>(step);
  RETURN_IF_ERROR(optimizer.ImportState(absl::MakeConstSpan(kept.state).subspan(range.size())));
  kept.state.resize(range.size());
  proto::PsStateSegment resumed = first;
  resumed.set_step(step);
  RETURN_IF_ERROR(FinishLoad(resumed, std::move(kept.state), std::move(optimizer)));
  return step;
}

absl::Status StateLoad::Add(const proto::PsStateSegment& segment) {
  if (keeps_ || (began_ && segment.keep_served_state())) {
    return absl::InvalidArgumentError(
        "a load that keeps the served state is one segment; nothing changed");
  }
  if (!began_ && segment.keep_served_state()) {
    RETURN_IF_ERROR(service_.CheckLoad(segment).status());
    if (!segment.payload().empty() || segment.offset() != 0) {
      return absl::InvalidArgumentError(
          "a load that keeps the served state carries no state; nothing changed");
    }
    first_ = segment;
    began_ = keeps_ = true;
    return absl::OkStatus();
  }
  if (!began_) {
    ASSIGN_OR_RETURN(const ShardJob job, service_.CheckLoad(segment));
    ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::Create(job.optimizer, job.range.size()));
    optimizer_.emplace(std::move(optimizer));
    elements_ = job.range.size() + optimizer_->state_size();
    first_ = segment;
    first_.clear_payload();
    // CheckLoad checked the range's length with its optimiser state: the parameters come first.
    parameters_.resize(job.range.size());
    began_ = true;
  } else if (!SameTransfer(first_, segment)) {
    return absl::InvalidArgumentError("a load stream carries one state; a segment changed it");
  }
  const std::string& payload = segment.payload();
  const uint64_t count = payload.size() / sizeof(float);
  if (payload.size() % sizeof(float) != 0 || segment.offset() != received_ ||
      count > elements_ - received_) {
    return absl::InvalidArgumentError(
        absl::StrCat("state segment of ", payload.size(), " bytes at offset ", segment.offset(),
                     " does not continue the state at ", received_, " of ", elements_));
  }
  const char* bytes = payload.data();
  const StatePieceSplit split = SplitStatePiece(received_, count, parameters_.size());
  if (split.in_parameters > 0) {
    std::memcpy(parameters_.data() + received_, bytes, split.in_parameters * sizeof(float));
  }
  if (split.in_state > 0) {
    RETURN_IF_ERROR(optimizer_->ImportStatePiece(
        split.state_offset,
        absl::MakeConstSpan(reinterpret_cast<const float*>(bytes) + split.in_parameters,
                            split.in_state)));
  }
  received_ += count;
  return absl::OkStatus();
}

absl::Status StateLoad::Finish() {
  if (keeps_) {
    ASSIGN_OR_RETURN(kept_step_, service_.KeepServedState(first_));
    return absl::OkStatus();
  }
  if (!began_ || received_ != elements_) {
    return absl::InvalidArgumentError(absl::StrCat("incomplete state: ", received_, " of ",
                                                   elements_, " elements; nothing changed"));
  }
  return service_.FinishLoad(first_, std::move(parameters_), *std::move(optimizer_));
}

grpc::ServerReadReactor<proto::PsStateSegment>* ParameterShardService::Load(
    grpc::CallbackServerContext* context, proto::PsLoadReply* reply) {
  // Before anything is read: an elastic shard's Load must claim its generation beside its key,
  // and the key must be that generation's load key.
  absl::StatusOr<LinkClaim> claim = ReadLinkClaim(*context);
  if (claim.ok() && elastic()) {
    if (!claim->has_generation) {
      claim = absl::PermissionDeniedError(
          "a Load must claim its generation in its metadata beside its load key; refused before "
          "anything was read");
    } else if (absl::Status status = CheckLoadKey(claim->key, claim->generation); !status.ok()) {
      claim = status;
    }
  }
  if (!claim.ok()) return new RefusedRead(ToGrpcStatus(claim.status()));
  absl::StatusOr<StreamAdmission::Ticket> ticket =
      admission_.Admit(elastic() ? WorkerName(0) : PeerOfCall(*context), "streams");
  if (!ticket.ok()) return new RefusedRead(ToGrpcStatus(ticket.status()));
  LoadReactor::Hook hook;
  {
    absl::MutexLock lock(&mu_);
    hook = load_wait_hook_;
  }
  return new LoadReactor(context, reply, *this, *std::move(claim), *std::move(ticket),
                         std::move(hook));
}

}  // namespace ringside::server
