#include "ps/ps_service.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "ps/ps_refusals.h"

namespace ringside::server {
namespace {

// Streams a range of values in segments: the step's sum (Step) or the parameters (GetParameters).
class RangeWriter {
 public:
  RangeWriter(Values values, uint64_t step, uint64_t segment_elements)
      : values_(std::move(values)), step_(step), segment_elements_(segment_elements) {}

  // The next segment into `out`; false when everything has been written. An empty range still
  // gets one (empty) segment, so every reply says which step it belongs to.
  bool Next(proto::PsRangeValues& out) {
    if (done_) return false;
    const uint64_t count = std::min<uint64_t>(segment_elements_, values_->size() - offset_);
    out.set_step(step_);
    out.set_offset(offset_);
    out.set_range_elements(values_->size());
    out.set_payload(reinterpret_cast<const char*>(values_->data() + offset_), count * 4);
    offset_ += count;
    done_ = offset_ >= values_->size();
    return true;
  }

 private:
  Values values_;
  uint64_t step_;
  uint64_t segment_elements_;
  uint64_t offset_ = 0;
  bool done_ = false;
};

// One Step stream. Its reactions (gRPC's callback threads) read the share and write the reply's
// later segments; the reply's first write is started by the state's WhenApplied callback, off any
// reaction, and may race with a reaction that ends the stream (the worker cancelling). A reaction
// keeps the call alive while it runs; off a reaction only a call that nobody has finished is
// alive, so every Finish goes through FinishOnce, which leaves it to the replying thread while
// that one is starting its write.
class StepReactor final : public grpc::ServerBidiReactor<proto::PsPush, proto::PsRangeValues> {
 public:
  using Hook = std::function<void(ParameterShardService::StepEvent, int worker)>;

  StepReactor(grpc::CallbackServerContext* context, const ParameterShardService& service,
              std::shared_ptr<const ShardGeneration> generation, uint64_t segment_elements,
              Hook hook)
      : context_(context),
        service_(service),
        presented_key_(MetadataValue(*context, kLinkKeyMetadata)),
        generation_(std::move(generation)),
        state_(*generation_->state),
        metrics_(generation_->links),
        segment_elements_(segment_elements),
        hook_(std::move(hook)) {}

  // Holds itself until OnDone (WhenApplied callbacks may outlive the call), then starts reading.
  static StepReactor* Start(std::shared_ptr<StepReactor> reactor) {
    StepReactor* raw = reactor.get();
    {
      absl::MutexLock lock(&raw->mu_);
      raw->self_ = std::move(reactor);
    }
    raw->StartRead(&raw->push_);
    return raw;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (context_->IsCancelled()) {  // the worker went away mid-push
        if (began_) state_.AbandonPush(worker_, step_);
        FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "push cancelled by the worker"));
      } else {
        CompletePush();
      }
      return;
    }
    absl::Status status;
    if (!began_) {
      // Before anything is stored: the push must be the assigned worker's of its generation.
      status = service_.CheckStepKey(presented_key_, push_.generation(),
                                     static_cast<int>(push_.worker_rank()));
      if (status.ok()) {
        status = state_.BeginPush(push_.generation(), static_cast<int>(push_.worker_rank()),
                                  push_.step(), push_.range_elements());
      }
      if (status.ok()) {
        began_ = true;
        worker_ = static_cast<int>(push_.worker_rank());
        step_ = push_.step();
      }
    } else if (push_.worker_rank() != static_cast<uint32_t>(worker_) || push_.step() != step_ ||
               push_.generation() != state_.config().generation) {
      status = absl::InvalidArgumentError("a push stream carries one worker's share of one step");
    }
    if (status.ok()) status = state_.AddSegment(worker_, step_, push_.offset(), push_.payload());
    if (!status.ok()) {
      if (began_) state_.AbandonPush(worker_, step_);
      FinishOnce(ToGrpcStatus(status));
      return;
    }
    if (static_cast<size_t>(worker_) < metrics_.from_worker.size() &&
        metrics_.from_worker[worker_].bytes != nullptr) {
      metrics_.from_worker[worker_].bytes->Increment(static_cast<double>(push_.payload().size()));
    }
    StartRead(&push_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker stopped reading"));
      return;
    }
    CountSent();
    WriteNext();
  }

  void OnCancel() override {
    // Waiting for the step with the worker gone: the share stays counted (it was complete).
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "worker cancelled the step"));
  }

  void OnDone() override {
    if (hook_) hook_(ParameterShardService::StepEvent::kDone, worker_);
    std::shared_ptr<StepReactor> last;  // released after the lock: may delete this
    absl::MutexLock lock(&mu_);
    last = std::move(self_);
  }

 private:
  void CompletePush() {
    if (!began_) {
      FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no gradient was pushed"));
      return;
    }
    absl::Status status = state_.FinishPush(worker_, step_);
    if (!status.ok()) {
      state_.AbandonPush(worker_, step_);
      FinishOnce(ToGrpcStatus(status));
      return;
    }
    std::shared_ptr<StepReactor> self;
    {
      absl::MutexLock lock(&mu_);
      self = self_;
    }
    state_.WhenApplied(step_, [self](Values values) { self->StartWriting(std::move(values)); });
  }

  void StartWriting(Values values) {
    if (values == nullptr) {
      FinishOnce(grpc::Status(grpc::StatusCode::ABORTED,
                              "the shard moved to a new generation before this step was applied; "
                              "take the latest assignment from the controller"));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      writer_.emplace(std::move(values), step_, segment_elements_);
      writer_->Next(out_);  // there is always a first segment
      starting_reply_ = true;
    }
    if (static_cast<size_t>(worker_) < metrics_.to_worker.size() &&
        metrics_.to_worker[worker_].expected_bytes != nullptr) {
      metrics_.to_worker[worker_].expected_bytes->Increment(
          static_cast<double>(state_.range_elements() * sizeof(float)));
    }
    if (hook_) hook_(ParameterShardService::StepEvent::kReplyStarting, worker_);
    // Safe off a reaction: nobody has called Finish (finished_ was false, and a FinishOnce from
    // now on leaves its Finish to this thread), so the call cannot be done yet.
    StartWrite(&out_);
    std::optional<grpc::Status> deferred;
    {
      absl::MutexLock lock(&mu_);
      starting_reply_ = false;
      deferred = std::exchange(deferred_finish_, std::nullopt);
    }
    // The write started above keeps the call alive until its OnWriteDone, and no one else will
    // call Finish, so this is the stream's one Finish, after which this thread touches no gRPC.
    if (deferred.has_value()) Finish(*deferred);
  }

  // Only from OnWriteDone, a reaction, which keeps the call alive while it runs. gRPC calls
  // happen outside the lock: a reaction may run on this thread.
  void WriteNext() {
    bool more;
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      more = writer_->Next(out_);
      if (!more) finished_ = true;
    }
    if (more) {
      StartWrite(&out_);
    } else {
      Finish(grpc::Status::OK);
    }
  }

  void CountSent() {
    if (static_cast<size_t>(worker_) >= metrics_.to_worker.size()) return;
    const LinkSendMetrics& link = metrics_.to_worker[worker_];
    if (link.bytes != nullptr) link.bytes->Increment(static_cast<double>(out_.payload().size()));
    if (link.messages != nullptr) link.messages->Increment();
  }

  // The stream's one Finish. Once it is called, gRPC may end the call (OnDone) as soon as no
  // operation is outstanding, and the stream must not be touched again; so while another thread
  // is starting the reply (StartWriting, not a reaction), the Finish is left to that thread, to
  // call once its StartWrite has been issued.
  void FinishOnce(const grpc::Status& status) {
    bool deferred;
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
      deferred = starting_reply_;
      if (deferred) deferred_finish_ = status;
    }
    if (deferred) {
      if (hook_) hook_(ParameterShardService::StepEvent::kFinishDeferred, worker_);
      return;
    }
    Finish(status);
  }

  grpc::CallbackServerContext* const context_;
  const ParameterShardService& service_;
  const std::string presented_key_;  // the link key the worker presented (common/auth.h)
  const std::shared_ptr<const ShardGeneration> generation_;  // keeps state_ and metrics_ alive
  ShardState& state_;
  const ShardLinkMetrics& metrics_;
  const uint64_t segment_elements_;
  proto::PsPush push_;
  bool began_ = false;  // read-side state: touched only by OnReadDone
  int worker_ = 0;
  uint64_t step_ = 0;

  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<RangeWriter> writer_ ABSL_GUARDED_BY(mu_);
  // StartWriting is starting the reply off a reaction; a Finish wanted meanwhile waits here.
  bool starting_reply_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> deferred_finish_ ABSL_GUARDED_BY(mu_);
  proto::PsRangeValues out_;  // the write in flight; one at a time
  std::shared_ptr<StepReactor> self_ ABSL_GUARDED_BY(mu_);
  const Hook hook_;  // test-only
};

// A Step stream to a shard that has nothing to serve yet.
class RefusedStep final : public grpc::ServerBidiReactor<proto::PsPush, proto::PsRangeValues> {
 public:
  RefusedStep() { Finish(NothingServed()); }
  void OnDone() override { delete this; }
};

class ParametersReactor final : public grpc::ServerWriteReactor<proto::PsRangeValues> {
 public:
  ParametersReactor(const ShardState::Applied& applied, uint64_t segment_elements)
      : writer_(applied.values, applied.step, segment_elements) {
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "client stopped reading"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (writer_.Next(out_)) {
      StartWrite(&out_);
    } else {
      Finish(grpc::Status::OK);
    }
  }
  RangeWriter writer_;
  proto::PsRangeValues out_;
};

}  // namespace

ParameterShardService::ParameterShardService(uint64_t segment_bytes, ShardMetricsFactory metrics)
    : segment_elements_(std::max<uint64_t>(1, segment_bytes / sizeof(float))),
      metrics_(std::move(metrics)) {}

void ParameterShardService::Serve(ShardGeneration generation) {
  std::shared_ptr<const ShardGeneration> previous;
  {
    absl::MutexLock lock(&mu_);
    previous =
        std::exchange(current_, std::make_shared<const ShardGeneration>(std::move(generation)));
  }
  if (previous != nullptr) previous->state->Close();
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

void ParameterShardService::SetStepHookForTesting(
    std::function<void(StepEvent event, int worker)> hook) {
  absl::MutexLock lock(&mu_);
  step_hook_ = std::move(hook);
}

void ParameterShardService::SetLoadWaitHookForTesting(std::function<void(uint64_t)> hook) {
  absl::MutexLock lock(&mu_);
  load_wait_hook_ = std::move(hook);
}

std::shared_ptr<const ShardGeneration> ParameterShardService::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

grpc::ServerBidiReactor<proto::PsPush, proto::PsRangeValues>* ParameterShardService::Step(
    grpc::CallbackServerContext* context) {
  std::shared_ptr<const ShardGeneration> generation = current();
  if (generation == nullptr) return new RefusedStep();
  StepReactor::Hook hook;
  {
    absl::MutexLock lock(&mu_);
    hook = step_hook_;
  }
  return StepReactor::Start(std::make_shared<StepReactor>(context, *this, std::move(generation),
                                                          segment_elements_, std::move(hook)));
}

grpc::ServerWriteReactor<proto::PsRangeValues>* ParameterShardService::GetParameters(
    grpc::CallbackServerContext* context, const proto::PsRangeRequest* /*request*/) {
  std::shared_ptr<const ShardGeneration> generation = current();
  if (generation == nullptr) return new RefusedWrite<proto::PsRangeValues>();
  // The live model is the job's: only the generation's designated member reads it.
  if (absl::Status status = CheckLoadKey(MetadataValue(*context, kLinkKeyMetadata),
                                         generation->state->config().generation);
      !status.ok()) {
    return new RefusedWrite<proto::PsRangeValues>(ToGrpcStatus(status));
  }
  // Parameters and step read together: a step being applied meanwhile cannot split them.
  return new ParametersReactor(generation->state->applied(), segment_elements_);
}

}  // namespace ringside::server
