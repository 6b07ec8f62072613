#include "server/ps/push_pull_shard.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::server {

absl::StatusOr<std::unique_ptr<PushPullShard>> PushPullShard::Create(
    PushPullShardConfig config, std::vector<float> values, absl::Span<const float> optimizer_state,
    const OptimizerConfig& optimizer, PushPullShardMetrics metrics) {
  if (config.workers < 1) return absl::InvalidArgumentError("a shard needs at least one worker");
  std::unique_ptr<PushPullPolicy> policy = MakePushPullPolicy(config, values.size());
  if (policy == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stale shard takes staleness >= 1 or async, or backup workers with "
        "staleness 0, not staleness ",
        StalenessText(config.staleness), " with ", config.backup_workers, " backup workers"));
  }
  ASSIGN_OR_RETURN(Optimizer state,
                   Optimizer::Create(policy->ShardOptimizer(optimizer), values.size()));
  if (!optimizer_state.empty()) {
    RETURN_IF_ERROR(Annotate(state.ImportState(optimizer_state),
                             absl::StrCat("restoring ", PsShardName(config.shard))));
  }
  return std::unique_ptr<PushPullShard>(
      new PushPullShard(config, std::move(policy), std::move(values), std::move(state), metrics));
}

PushPullShard::PushPullShard(PushPullShardConfig config, std::unique_ptr<PushPullPolicy> policy,
                             std::vector<float> values, Optimizer optimizer,
                             PushPullShardMetrics metrics)
    : config_(config),
      range_elements_(values.size()),
      metrics_(metrics),
      check_(ShardIdentity{config.generation, config.workers, config.shard, values.size()},
             metrics.nonfinite),
      policy_(std::move(policy)),
      accepted_(static_cast<size_t>(config.workers), config.completed_steps),
      completed_(static_cast<size_t>(config.workers), config.completed_steps),
      open_(static_cast<size_t>(config.workers)),
      published_(std::make_shared<const std::vector<float>>(values)),
      optimizer_(std::move(optimizer)),
      values_(std::move(values)),
      resume_step_(config.completed_steps),
      applier_([this](const ApplierThread::Liveness& liveness) { ApplyLoop(liveness); }) {}

PushPullShard::~PushPullShard() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queued_.Signal();
  }
  Close();  // answers pulls still waiting
  // applier_, destroyed first, joins the applier, or (run on it, from a callback that dropped the
  // last reference: a reactor holding the generation) lets it return once that callback is gone.
}

void PushPullShard::Close() {
  Ready ready;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    ready = ReadyLocked();
  }
  for (auto& [done, answer] : ready) done(std::move(answer));
}

absl::Status PushPullShard::BeginPush(uint64_t generation, int worker, uint64_t step,
                                      uint64_t read_version, uint64_t range_elements) {
  RETURN_IF_ERROR(check_.Header(generation, worker, range_elements));
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        PsShardName(config_.shard), " has moved past generation ", config_.generation));
  }
  if (step < accepted_[worker]) {
    return absl::AlreadyExistsError(absl::StrCat("worker ", worker, " already pushed step ", step));
  }
  if (step > accepted_[worker] && !policy_->MaySkipSteps()) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " pushes step ", step, " before step ", accepted_[worker]));
  }
  if (read_version > version_) {  // a pull answers only versions applied
    return absl::InvalidArgumentError(absl::StrCat("read version ", read_version, " is beyond ",
                                                   PsShardName(config_.shard), "'s ", version_));
  }
  OpenPush& push = open_[worker];
  RETURN_IF_ERROR(push.share.Begin(worker, step));
  push.step = step;
  push.read_version = read_version;
  return absl::OkStatus();
}

absl::StatusOr<PushPullShard::OpenPush*> PushPullShard::OpenPushLocked(int worker, uint64_t step) {
  RETURN_IF_ERROR(check_.Worker(worker));
  OpenPush& push = open_[worker];
  if (push.share.state() == ReceivedShare::State::kIdle || push.step != step) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " sent a segment outside a push of step ", step));
  }
  return &push;
}

absl::Status PushPullShard::AddSegment(int worker, uint64_t step, uint64_t offset,
                                       std::vector<absl::string_view> pieces,
                                       std::shared_ptr<const void> owner) {
  size_t bytes = 0;
  for (absl::string_view piece : pieces) bytes += piece.size();
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(OpenPush* const push, OpenPushLocked(worker, step));
  ASSIGN_OR_RETURN(const uint64_t count,
                   push->share.Check(check_, worker, step,
                                     {WireDtype::kFp32, /*descending=*/false, range_elements_},
                                     offset, bytes, pieces, /*decoded=*/false));
  push->share.Keep(offset, count, std::move(pieces), std::move(owner));
  return absl::OkStatus();
}

absl::Status PushPullShard::FinishPush(int worker, uint64_t step) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(OpenPush* const push, OpenPushLocked(worker, step));
  RETURN_IF_ERROR(push->share.Finish(worker, step, range_elements_));
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        PsShardName(config_.shard), " has moved past generation ", config_.generation));
  }
  // BeginPush checked the step; only this push could have moved accepted_[worker] since.
  Update update{worker, step, push->read_version, push->share.Hand(0, range_elements_, false)};
  *push = OpenPush{};
  accepted_[worker] = step + 1;
  policy_->Pushed(worker, update.read_version);
  if (policy_->Drops(update.read_version, version_)) {
    if (metrics_.dropped != nullptr) metrics_.dropped->Increment();
    return absl::OkStatus();
  }
  queue_.push_back(std::move(update));
  queued_.Signal();
  return absl::OkStatus();
}

void PushPullShard::AbandonPush(int worker, uint64_t step) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<OpenPush*> push = OpenPushLocked(worker, step);
  if (push.ok()) **push = OpenPush{};
}

absl::Status PushPullShard::Push(int worker, uint64_t step, uint64_t read_version,
                                 std::vector<float> gradient) {
  RETURN_IF_ERROR(BeginPush(config_.generation, worker, step, read_version, gradient.size()));
  auto copy = std::make_shared<const std::vector<float>>(std::move(gradient));
  const absl::string_view bytes(reinterpret_cast<const char*>(copy->data()),
                                copy->size() * sizeof(float));
  absl::Status status = AddSegment(worker, step, 0, {bytes}, std::move(copy));
  if (status.ok()) status = FinishPush(worker, step);
  if (!status.ok()) AbandonPush(worker, step);
  return status;
}

PushPullProgress PushPullShard::ProgressLocked() const {
  return PushPullProgress{version_, &completed_};
}

uint64_t PushPullShard::SlowestLocked() const { return policy_->Slowest(ProgressLocked()); }

bool PushPullShard::MayAnswerLocked(const Waiter& waiter) const {
  return closed_ || policy_->MayStart(waiter.worker, waiter.step, ProgressLocked());
}

PushPullShard::Ready PushPullShard::ReadyLocked() {
  Ready ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!MayAnswerLocked(*it)) {
      ++it;
      continue;
    }
    absl::StatusOr<PushPullRead> answer =
        closed_ ? absl::StatusOr<PushPullRead>(absl::AbortedError(absl::StrCat(
                      PsShardName(config_.shard), " moved past generation ", config_.generation,
                      " before step ", it->step, " could start; take the latest assignment")))
                : PushPullRead{version_, SlowestLocked(), published_};
    ready.emplace_back(std::move(it->done), std::move(answer));
    it = waiters_.erase(it);
  }
  return ready;
}

void PushPullShard::WhenMayStart(int worker, uint64_t step,
                                 std::function<void(absl::StatusOr<PushPullRead>)> done) {
  if (absl::Status status = check_.Worker(worker); !status.ok()) {
    done(status);
    return;
  }
  Ready ready;
  {
    absl::MutexLock lock(&mu_);
    waiters_.push_back(Waiter{worker, step, std::move(done)});
    ready = ReadyLocked();
  }
  for (auto& [callback, answer] : ready) callback(std::move(answer));
}

void PushPullShard::ApplyLoop(const ApplierThread::Liveness& liveness) {
  while (true) {
    Update update;
    uint64_t version = 0;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && (queue_.empty() || closed_)) queued_.Wait(&mu_);
      if (stopping_) return;
      update = std::move(queue_.front());
      queue_.pop_front();
      version = version_;
    }
    if (policy_->Drops(update.read_version, version)) {  // the quorum's step filled up before it
      if (metrics_.dropped != nullptr) metrics_.dropped->Increment();
      continue;
    }
    Values published;
    std::vector<std::pair<int, uint64_t>> applied;  // worker, step
    {
      absl::MutexLock apply(&apply_mu_);
      published = ApplyLocked(update);
      if (published != nullptr) applied = std::exchange(summed_, {});
    }
    if (published == nullptr) continue;
    for (size_t i = 0; i < applied.size(); ++i) {
      if (metrics_.staleness != nullptr) {
        metrics_.staleness->Observe(static_cast<double>(version - update.read_version));
      }
      if (metrics_.updates != nullptr) metrics_.updates->Increment();
    }
    {
      Ready ready;
      {
        absl::MutexLock lock(&mu_);
        ++version_;
        published_ = std::move(published);
        for (const auto& [worker, step] : applied) completed_[worker] = step + 1;
        ready = ReadyLocked();
      }
      for (auto& [done, answer] : ready) done(std::move(answer));
    }  // the callbacks are destroyed here, and one may destroy this (see ~PushPullShard)
    if (liveness.owner_destroyed()) return;
    absl::MutexLock lock(&mu_);
    settled_ = std::max(settled_, version + 1);
  }
}

Values PushPullShard::ApplyLocked(const Update& update) {
  summed_.emplace_back(update.worker, update.step);
  // The share holds every element of the range (FinishPush), so the reader fills it.
  gradient_.resize(range_elements_);
  HeldShareReader(WireDtype::kFp32, update.share, 0).Read(absl::MakeSpan(gradient_), false);
  if (!policy_->Take(gradient_, summed_.size())) return nullptr;
  // Sizes match by BeginPush's check, so the optimiser cannot refuse.
  optimizer_.Step(absl::MakeSpan(values_), gradient_).IgnoreError();
  resume_step_ = policy_->ResumeStep(resume_step_, update.step);
  return std::make_shared<const std::vector<float>>(values_);
}

absl::Status PushPullShard::AwaitSettled(uint64_t version, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto settled = [this, version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return settled_ >= version || closed_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&settled), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat(PsShardName(config_.shard), " applied ", settled_, " updates, not ", version));
  }
  return absl::OkStatus();
}

PushPullRead PushPullShard::Read() const {
  absl::MutexLock lock(&mu_);
  return PushPullRead{version_, SlowestLocked(), published_};
}

std::vector<float> PushPullShard::ExportState() const {
  absl::MutexLock apply(&apply_mu_);
  std::vector<float> state = values_;
  const std::vector<float> optimizer = optimizer_.ExportState();
  state.insert(state.end(), optimizer.begin(), optimizer.end());
  return state;
}

PushPullShard::Resumable PushPullShard::ResumeState() const {
  absl::MutexLock apply(&apply_mu_);
  Resumable resumable{resume_step_, values_};
  std::vector<float> optimizer = optimizer_.ExportState();
  optimizer[0] = static_cast<float>(resume_step_);  // [steps, ...]: exact up to 2^24
  resumable.state.insert(resumable.state.end(), optimizer.begin(), optimizer.end());
  return resumable;
}

uint64_t PushPullShard::completed(int worker) const {
  if (!check_.Worker(worker).ok()) return 0;
  absl::MutexLock lock(&mu_);
  return completed_[worker];
}

}  // namespace ringside::server
