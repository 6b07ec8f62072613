#include "server/ps/stale_shard.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "server/ps/sync_rules.h"

namespace ringside::server {

absl::StatusOr<std::unique_ptr<StaleShard>> StaleShard::Create(
    StaleShardConfig config, std::vector<float> values, absl::Span<const float> optimizer_state,
    const OptimizerConfig& optimizer, StaleShardMetrics metrics) {
  if (config.workers < 1) return absl::InvalidArgumentError("a shard needs at least one worker");
  const bool quorum = config.backup_workers > 0;
  if (quorum ? config.staleness != 0
             : config.staleness < 1 && config.staleness != kAsyncStaleness) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stale shard takes staleness >= 1 or async, or backup workers with "
        "staleness 0, not staleness ",
        StalenessText(config.staleness), " with ", config.backup_workers, " backup workers"));
  }
  // N updates of a share scaled by N at lr / N make one synchronous step's worth (see the
  // header); the quorum mode steps once per step, at the job's rate.
  OptimizerConfig scaled = optimizer;
  if (!quorum) scaled.learning_rate = optimizer.learning_rate / static_cast<float>(config.workers);
  ASSIGN_OR_RETURN(Optimizer state, Optimizer::Create(scaled, values.size()));
  if (!optimizer_state.empty()) {
    RETURN_IF_ERROR(Annotate(state.ImportState(optimizer_state),
                             absl::StrCat("restoring ", PsShardName(config.shard))));
  }
  return std::unique_ptr<StaleShard>(
      new StaleShard(config, std::move(values), std::move(state), metrics));
}

StaleShard::StaleShard(StaleShardConfig config, std::vector<float> values, Optimizer optimizer,
                       StaleShardMetrics metrics)
    : config_(config),
      range_elements_(values.size()),
      metrics_(metrics),
      accepted_(static_cast<size_t>(config.workers), config.completed_steps),
      completed_(static_cast<size_t>(config.workers), config.completed_steps),
      last_read_(static_cast<size_t>(config.workers), -1),
      published_(std::make_shared<const std::vector<float>>(values)),
      optimizer_(std::move(optimizer)),
      values_(std::move(values)),
      resume_step_(config.completed_steps),
      sum_(quorum_mode() ? values_.size() : 0, 0.0f),
      applier_([this](const ApplierThread::Liveness& liveness) { ApplyLoop(liveness); }) {}

StaleShard::~StaleShard() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queued_.Signal();
  }
  Close();  // answers pulls still waiting
  // applier_, destroyed first, joins the applier, or (run on it, from a callback that dropped the
  // last reference: a reactor holding the generation) lets it return once that callback is gone.
}

void StaleShard::Close() {
  Ready ready;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    ready = ReadyLocked();
  }
  for (auto& [done, answer] : ready) done(std::move(answer));
}

absl::Status StaleShard::CheckWorker(int worker) const {
  if (worker < 0 || worker >= config_.workers) {
    return absl::InvalidArgumentError(absl::StrCat("worker rank ", worker, " is not in generation ",
                                                   config_.generation, " of ", config_.workers,
                                                   " workers on ", PsShardName(config_.shard)));
  }
  return absl::OkStatus();
}

absl::Status StaleShard::Push(int worker, uint64_t step, uint64_t read_version,
                              std::vector<float> gradient) {
  RETURN_IF_ERROR(CheckWorker(worker));
  if (gradient.size() != range_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("a gradient of ", gradient.size(),
                                                   " elements for ", PsShardName(config_.shard),
                                                   "'s range of ", range_elements_));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        PsShardName(config_.shard), " has moved past generation ", config_.generation));
  }
  if (step < accepted_[worker]) {
    return absl::AlreadyExistsError(absl::StrCat("worker ", worker, " already pushed step ", step));
  }
  if (step > accepted_[worker] && !quorum_mode()) {  // the quorum mode's workers skip steps
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " pushes step ", step, " before step ", accepted_[worker]));
  }
  if (read_version > version_) {  // a pull answers only versions applied
    return absl::InvalidArgumentError(absl::StrCat("read version ", read_version, " is beyond ",
                                                   PsShardName(config_.shard), "'s ", version_));
  }
  accepted_[worker] = step + 1;
  if (quorum_mode()) {
    last_read_[worker] = static_cast<int64_t>(read_version);
    if (read_version < version_) {  // its step was applied without it
      if (metrics_.dropped != nullptr) metrics_.dropped->Increment();
      return absl::OkStatus();
    }
  }
  queue_.push_back(Update{worker, step, read_version, std::move(gradient)});
  queued_.Signal();
  return absl::OkStatus();
}

uint64_t StaleShard::SlowestLocked() const {
  if (quorum_mode()) return config_.completed_steps + version_;
  return *std::min_element(completed_.begin(), completed_.end());
}

bool StaleShard::MayAnswerLocked(const Waiter& waiter) const {
  if (closed_) return true;
  if (quorum_mode()) return static_cast<int64_t>(version_) > last_read_[waiter.worker];
  return completed_[waiter.worker] >= waiter.step &&
         MayStartStep(config_.staleness, static_cast<int64_t>(waiter.step),
                      static_cast<int64_t>(SlowestLocked()));
}

StaleShard::Ready StaleShard::ReadyLocked() {
  Ready ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!MayAnswerLocked(*it)) {
      ++it;
      continue;
    }
    absl::StatusOr<StaleRead> answer =
        closed_ ? absl::StatusOr<StaleRead>(absl::AbortedError(absl::StrCat(
                      PsShardName(config_.shard), " moved past generation ", config_.generation,
                      " before step ", it->step, " could start; take the latest assignment")))
                : StaleRead{version_, SlowestLocked(), published_};
    ready.emplace_back(std::move(it->done), std::move(answer));
    it = waiters_.erase(it);
  }
  return ready;
}

void StaleShard::WhenMayStart(int worker, uint64_t step,
                              std::function<void(absl::StatusOr<StaleRead>)> done) {
  if (absl::Status status = CheckWorker(worker); !status.ok()) {
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

void StaleShard::ApplyLoop(const ApplierThread::Liveness& liveness) {
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
    if (quorum_mode() && update.read_version < version) {  // the step filled up before it
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
    }  // the callbacks are destroyed here, and one may destroy this (see ~StaleShard)
    if (liveness.owner_destroyed()) return;
    absl::MutexLock lock(&mu_);
    settled_ = std::max(settled_, version + 1);
  }
}

Values StaleShard::ApplyLocked(Update& update) {
  summed_.emplace_back(update.worker, update.step);
  float scale = static_cast<float>(config_.workers);
  if (quorum_mode()) {
    const int quorum = BackupQuorum(config_.workers, config_.backup_workers);
    for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += update.gradient[i];
    if (summed_.size() < static_cast<size_t>(quorum)) return nullptr;
    // Each share is normalised by the global batch: N / q turns q of them into their mean.
    scale /= static_cast<float>(quorum);
    update.gradient.swap(sum_);
    std::fill(sum_.begin(), sum_.end(), 0.0f);  // the pushed buffer holds the next step's sum
  }
  for (float& g : update.gradient) g *= scale;
  // Sizes match by Push's check, so the optimiser cannot refuse.
  optimizer_.Step(absl::MakeSpan(values_), update.gradient).IgnoreError();
  if (quorum_mode()) {
    ++resume_step_;
  } else {
    resume_step_ = std::max(resume_step_, update.step + 1);
  }
  return std::make_shared<const std::vector<float>>(values_);
}

absl::Status StaleShard::AwaitSettled(uint64_t version, absl::Duration timeout) const {
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

StaleRead StaleShard::Read() const {
  absl::MutexLock lock(&mu_);
  return StaleRead{version_, SlowestLocked(), published_};
}

std::vector<float> StaleShard::ExportState() const {
  absl::MutexLock apply(&apply_mu_);
  std::vector<float> state = values_;
  const std::vector<float> optimizer = optimizer_.ExportState();
  state.insert(state.end(), optimizer.begin(), optimizer.end());
  return state;
}

StaleShard::Resumable StaleShard::ResumeState() const {
  absl::MutexLock apply(&apply_mu_);
  Resumable resumable{resume_step_, values_};
  std::vector<float> optimizer = optimizer_.ExportState();
  optimizer[0] = static_cast<float>(resume_step_);  // [steps, ...]: exact up to 2^24
  resumable.state.insert(resumable.state.end(), optimizer.begin(), optimizer.end());
  return resumable;
}

uint64_t StaleShard::completed(int worker) const {
  if (!CheckWorker(worker).ok()) return 0;
  absl::MutexLock lock(&mu_);
  return completed_[worker];
}

}  // namespace ringside::server
