#include "ps/shard_state.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::server {

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Create(ShardConfig config,
                                                               std::vector<float> initial,
                                                               const OptimizerConfig& optimizer,
                                                               ShardStepMetrics metrics) {
  if (config.workers < 1) return absl::InvalidArgumentError("a shard needs at least one worker");
  ASSIGN_OR_RETURN(Optimizer state, Optimizer::Create(optimizer, initial.size()));
  return std::unique_ptr<ShardState>(
      new ShardState(config, /*step=*/0, std::move(initial), std::move(state), metrics));
}

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Restore(
    ShardConfig config, uint64_t step, std::vector<float> values,
    absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
    ShardStepMetrics metrics) {
  if (config.workers < 1) return absl::InvalidArgumentError("a shard needs at least one worker");
  ASSIGN_OR_RETURN(Optimizer state, Optimizer::Create(optimizer, values.size()));
  RETURN_IF_ERROR(Annotate(state.ImportState(optimizer_state),
                           absl::StrCat("restoring ", PsShardName(config.shard))));
  if (static_cast<uint64_t>(state.steps()) != step) {
    return absl::InvalidArgumentError(absl::StrCat("optimizer state has taken ", state.steps(),
                                                   " steps but the shard is restored at step ",
                                                   step));
  }
  return std::unique_ptr<ShardState>(
      new ShardState(config, step, std::move(values), std::move(state), metrics));
}

ShardState::ShardState(ShardConfig config, uint64_t step, std::vector<float> values,
                       Optimizer optimizer, ShardStepMetrics metrics)
    : config_(config),
      range_elements_(values.size()),
      metrics_(metrics),
      collecting_(step),
      shares_(static_cast<size_t>(config.workers)),
      current_{step, std::make_shared<const std::vector<float>>(values), nullptr},
      optimizer_(std::move(optimizer)),
      values_(std::move(values)) {
  applier_ = std::thread([this] { ApplyLoop(); });
}

ShardState::~ShardState() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    step_complete_.Signal();
  }
  if (std::this_thread::get_id() == applier_.get_id()) {
    // A callback the applier ran dropped the last reference: the applier cannot join itself, so
    // it is told to return as soon as that callback is destroyed, touching nothing of this.
    *applier_destroyed_ = true;
    applier_.detach();
  } else {
    applier_.join();
  }
}

void ShardState::Close() {
  Waiters waiters;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    waiters.swap(waiters_);
  }
  for (auto& waiter : waiters) waiter.second(nullptr);
}

absl::Status ShardState::CheckWorker(int worker) const {
  if (worker < 0 || worker >= config_.workers) {
    return absl::InvalidArgumentError(absl::StrCat("worker rank ", worker, " is not in generation ",
                                                   config_.generation, " of ", config_.workers,
                                                   " workers on ", PsShardName(config_.shard)));
  }
  return absl::OkStatus();
}

absl::Status ShardState::CheckStep(uint64_t step) const {
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        PsShardName(config_.shard), " has moved past generation ", config_.generation));
  }
  if (step != collecting_) {
    return absl::FailedPreconditionError(
        absl::StrCat(PsShardName(config_.shard), " is collecting step ", collecting_, ", not step ",
                     step, step < collecting_ ? " (already applied)" : " (ahead of the others)"));
  }
  return absl::OkStatus();
}

absl::Status ShardState::BeginPush(uint64_t generation, int worker, uint64_t step,
                                   uint64_t range_elements) {
  if (generation != config_.generation) {
    return absl::FailedPreconditionError(absl::StrCat("generation ", generation, " is not ",
                                                      PsShardName(config_.shard), "'s current ",
                                                      config_.generation));
  }
  RETURN_IF_ERROR(CheckWorker(worker));
  if (range_elements != range_elements_) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " pushes a range of ", range_elements, " elements but ",
                     PsShardName(config_.shard), " owns ", range_elements_,
                     "; do the worker and the shard use the same --model and --ps_shards?"));
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckStep(step));
  WorkerShare& share = shares_[worker];
  if (share.state != PushState::kIdle) {
    return absl::AlreadyExistsError(
        absl::StrCat("worker ", worker, " already ",
                     share.state == PushState::kDone ? "pushed" : "is pushing", " step ", step));
  }
  share.state = PushState::kPushing;
  share.received = 0;
  // Allocates only while the applier still holds this worker's buffer of the previous step.
  share.values.resize(range_elements_);
  if (first_push_ == absl::InfinitePast()) first_push_ = absl::Now();
  return absl::OkStatus();
}

absl::Status ShardState::AddSegment(int worker, uint64_t step, uint64_t offset,
                                    absl::string_view payload) {
  RETURN_IF_ERROR(CheckWorker(worker));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckStep(step));
  WorkerShare& share = shares_[worker];
  if (share.state != PushState::kPushing) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " sent a segment outside a push of step ", step));
  }
  if (payload.size() % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment of ", payload.size(), " bytes is not a whole number of float32"));
  }
  const uint64_t count = payload.size() / sizeof(float);
  if (offset != share.received || count > range_elements_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment [", offset, ", ", offset + count, ") does not continue worker ", worker,
        "'s share at ", share.received, " within a range of ", range_elements_));
  }
  if (count > 0) std::memcpy(share.values.data() + offset, payload.data(), payload.size());
  share.received += count;
  return absl::OkStatus();
}

absl::Status ShardState::FinishPush(int worker, uint64_t step) {
  RETURN_IF_ERROR(CheckWorker(worker));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckStep(step));
  WorkerShare& share = shares_[worker];
  if (share.state != PushState::kPushing || share.received != range_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", worker, "'s share of step ", step,
                                                   " is incomplete: ", share.received, " of ",
                                                   range_elements_, " elements"));
  }
  share.state = PushState::kDone;
  for (const WorkerShare& other : shares_) {
    if (other.state != PushState::kDone) return absl::OkStatus();
  }
  // The last share: hand the step over (the buffers move, nothing is copied) and start
  // collecting the next one.
  CompleteStep complete;
  complete.step = collecting_;
  complete.first_push = first_push_;
  complete.last_push = absl::Now();
  complete.shares.reserve(shares_.size());
  for (WorkerShare& done : shares_) {
    complete.shares.push_back(std::move(done.values));
    done = WorkerShare{};
  }
  complete_.push_back(std::move(complete));
  ++collecting_;
  first_push_ = absl::InfinitePast();
  step_complete_.Signal();
  return absl::OkStatus();
}

void ShardState::AbandonPush(int worker, uint64_t step) {
  if (!CheckWorker(worker).ok()) return;
  absl::MutexLock lock(&mu_);
  if (step != collecting_ || shares_[worker].state != PushState::kPushing) return;
  shares_[worker].state = PushState::kIdle;
  shares_[worker].received = 0;
}

void ShardState::ApplyLoop() {
  bool destroyed = false;
  applier_destroyed_ = &destroyed;
  while (true) {
    CompleteStep complete;
    std::function<void(uint64_t)> hook;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && (complete_.empty() || closed_)) step_complete_.Wait(&mu_);
      if (stopping_) return;
      complete = std::move(complete_.front());
      complete_.pop_front();
      hook = apply_hook_;
    }
    Published next = Apply(complete, hook);

    Waiters ready;
    const Values sum = next.sum;
    {
      absl::MutexLock lock(&mu_);
      current_ = std::move(next);
      // Shares not begun for the next step get their buffers back, so steady training
      // allocates none.
      for (size_t w = 0; w < shares_.size(); ++w) {
        if (shares_[w].state == PushState::kIdle) shares_[w].values.swap(complete.shares[w]);
      }
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->first < current_.step) {
          ready.push_back(std::move(*it));
          it = waiters_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (metrics_.steps != nullptr) metrics_.steps->Increment();

    for (auto& waiter : ready) waiter.second(sum);
    ready.clear();  // may drop the last reference to this state (see ~ShardState)
    if (destroyed) return;
  }
}

ShardState::Published ShardState::Apply(CompleteStep& complete,
                                        const std::function<void(uint64_t)>& hook) {
  const absl::Time start = absl::Now();
  if (metrics_.wait_seconds != nullptr) {
    metrics_.wait_seconds->Observe(absl::ToDoubleSeconds(complete.last_push - complete.first_push));
  }
  std::vector<float>& sum = complete.shares[0];  // rank order: 0 + 1 + ... + (N-1)
  for (size_t w = 1; w < complete.shares.size(); ++w) {
    const std::vector<float>& values = complete.shares[w];
    for (uint64_t i = 0; i < range_elements_; ++i) sum[i] += values[i];
  }
  if (hook) hook(complete.step);
  // Sizes match by construction, so the optimiser cannot refuse.
  optimizer_.Step(absl::MakeSpan(values_), sum).IgnoreError();
  Published next;
  next.step = complete.step + 1;
  next.values = std::make_shared<const std::vector<float>>(values_);
  next.sum = std::make_shared<const std::vector<float>>(std::move(sum));
  if (metrics_.update_seconds != nullptr) {
    metrics_.update_seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return next;
}

void ShardState::WhenApplied(uint64_t step, std::function<void(Values)> done) {
  Values sum;
  {
    absl::MutexLock lock(&mu_);
    if (step >= current_.step && !closed_) {
      waiters_.emplace_back(step, std::move(done));
      return;
    }
    // A waiter's step is the one being collected or applied; an older one is not kept.
    if (step + 1 == current_.step) sum = current_.sum;
  }
  done(sum);
}

ShardState::Applied ShardState::applied() const {
  absl::MutexLock lock(&mu_);
  return Applied{current_.step, current_.values};
}

uint64_t ShardState::current_step() const { return applied().step; }

Values ShardState::parameters() const { return applied().values; }

void ShardState::SetApplyHookForTesting(std::function<void(uint64_t step)> hook) {
  absl::MutexLock lock(&mu_);
  apply_hook_ = std::move(hook);
}

}  // namespace ringside::server
