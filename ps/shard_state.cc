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
      new ShardState(config, std::move(initial), std::move(state), metrics));
}

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Restore(
    ShardConfig config, uint64_t step, std::vector<float> values,
    absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
    ShardStepMetrics metrics) {
  ASSIGN_OR_RETURN(std::unique_ptr<ShardState> state,
                   Create(config, std::move(values), optimizer, metrics));
  absl::MutexLock lock(&state->mu_);
  RETURN_IF_ERROR(Annotate(state->optimizer_.ImportState(optimizer_state),
                           absl::StrCat("restoring ", PsShardName(config.shard))));
  if (static_cast<uint64_t>(state->optimizer_.steps()) != step) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state has taken ", state->optimizer_.steps(),
                     " steps but the shard is restored at step ", step));
  }
  state->step_ = step;
  return state;
}

absl::StatusOr<ShardState::Snapshot> ShardState::Export(std::optional<uint64_t> step) const {
  absl::MutexLock lock(&mu_);
  if (!step.has_value() || *step == step_)
    return Snapshot{step_, values_, optimizer_.ExportState()};
  if (previous_.has_value() && previous_->step == *step) return *previous_;
  return absl::FailedPreconditionError(
      absl::StrCat(PsShardName(config_.shard), " holds the state after step ", step_,
                   previous_.has_value() ? absl::StrCat(" and after step ", previous_->step) : "",
                   ", not after step ", *step, "; the shards cannot agree on a step"));
}

void ShardState::Close() {
  std::vector<std::pair<uint64_t, std::function<void(Parameters)>>> waiters;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    waiters.swap(waiters_);
  }
  for (auto& waiter : waiters) waiter.second(nullptr);
}

ShardState::ShardState(ShardConfig config, std::vector<float> initial, Optimizer optimizer,
                       ShardStepMetrics metrics)
    : config_(config),
      range_elements_(initial.size()),
      metrics_(metrics),
      optimizer_(std::move(optimizer)),
      values_(std::move(initial)),
      snapshot_(std::make_shared<const std::vector<float>>(values_)),
      shares_(static_cast<size_t>(config.workers)) {}

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
  if (step != step_) {
    return absl::FailedPreconditionError(
        absl::StrCat(PsShardName(config_.shard), " is collecting step ", step_, ", not step ", step,
                     step < step_ ? " (already applied)" : " (ahead of the others)"));
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
  std::vector<std::function<void(Parameters)>> ready;
  Parameters parameters;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckStep(step));
    WorkerShare& share = shares_[worker];
    if (share.state != PushState::kPushing || share.received != range_elements_) {
      return absl::InvalidArgumentError(absl::StrCat("worker ", worker, "'s share of step ", step,
                                                     " is incomplete: ", share.received, " of ",
                                                     range_elements_, " elements"));
    }
    share.state = PushState::kDone;
    ready = MaybeApply();
    parameters = snapshot_;
  }
  for (auto& done : ready) done(parameters);
  return absl::OkStatus();
}

void ShardState::AbandonPush(int worker, uint64_t step) {
  if (!CheckWorker(worker).ok()) return;
  absl::MutexLock lock(&mu_);
  if (step != step_ || shares_[worker].state != PushState::kPushing) return;
  shares_[worker].state = PushState::kIdle;
  shares_[worker].received = 0;
}

std::vector<std::function<void(Parameters)>> ShardState::MaybeApply() {
  for (const WorkerShare& share : shares_) {
    if (share.state != PushState::kDone) return {};
  }
  const absl::Time start = absl::Now();
  if (metrics_.wait_seconds != nullptr) {
    metrics_.wait_seconds->Observe(absl::ToDoubleSeconds(start - first_push_));
  }
  // Kept until the next step applies: the step just applied may be missing on another shard.
  if (!previous_.has_value()) previous_.emplace();
  previous_->step = step_;
  previous_->values.assign(values_.begin(), values_.end());
  optimizer_.ExportStateTo(previous_->optimizer_state);
  std::vector<float>& sum = shares_[0].values;  // rank order: 0 + 1 + ... + (N-1)
  for (size_t w = 1; w < shares_.size(); ++w) {
    const std::vector<float>& values = shares_[w].values;
    for (uint64_t i = 0; i < range_elements_; ++i) sum[i] += values[i];
  }
  // Sizes match by construction, so the optimiser cannot refuse.
  optimizer_.Step(absl::MakeSpan(values_), sum).IgnoreError();
  snapshot_ = std::make_shared<const std::vector<float>>(values_);
  ++step_;
  for (WorkerShare& share : shares_) {
    share.state = PushState::kIdle;
    share.received = 0;
  }
  first_push_ = absl::InfinitePast();
  if (metrics_.update_seconds != nullptr) {
    metrics_.update_seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  if (metrics_.steps != nullptr) metrics_.steps->Increment();
  std::vector<std::function<void(Parameters)>> ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->first < step_) {
      ready.push_back(std::move(it->second));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  return ready;
}

void ShardState::WhenApplied(uint64_t step, std::function<void(Parameters)> done) {
  Parameters parameters;
  {
    absl::MutexLock lock(&mu_);
    if (step >= step_ && !closed_) {
      waiters_.emplace_back(step, std::move(done));
      return;
    }
    if (step < step_) parameters = snapshot_;
  }
  done(parameters);
}

uint64_t ShardState::current_step() const {
  absl::MutexLock lock(&mu_);
  return step_;
}

Parameters ShardState::parameters() const {
  absl::MutexLock lock(&mu_);
  return snapshot_;
}

}  // namespace ringside::server
