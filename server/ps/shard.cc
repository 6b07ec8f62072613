#include "server/ps/shard.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/training_options.h"

namespace ringside::server {
namespace {

ShardConfig StepsConfig(const ShardSpec& spec) {
  return ShardConfig{spec.generation, spec.workers, spec.shard};
}

PushPullShardConfig PushPullConfig(const ShardSpec& spec, uint64_t step) {
  return PushPullShardConfig{spec.generation,          spec.workers,       spec.shard,
                             spec.staleness,
                             /*completed_steps=*/step, spec.backup_workers};
}

}  // namespace

absl::StatusOr<std::shared_ptr<Shard>> Shard::Start(const ShardSpec& spec,
                                                    std::vector<float> values,
                                                    const ShardMetrics& metrics) {
  if (ShardsHoldTheState(spec.staleness, spec.backup_workers)) {
    ASSIGN_OR_RETURN(std::unique_ptr<PushPullShard> push_pull,
                     PushPullShard::Create(PushPullConfig(spec, /*step=*/0), std::move(values), {},
                                           spec.optimizer, metrics.push_pull));
    return PushPull(std::move(push_pull));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<ShardState> steps,
      ShardState::Create(StepsConfig(spec), std::move(values), spec.optimizer, metrics.steps));
  return Synchronous(std::move(steps));
}

absl::StatusOr<std::shared_ptr<Shard>> Shard::Resume(const ShardSpec& spec, uint64_t step,
                                                     std::vector<float> values, Optimizer optimizer,
                                                     const ShardMetrics& metrics) {
  if (ShardsHoldTheState(spec.staleness, spec.backup_workers)) {
    // As ShardState::Restore checks synchronous steps: the state has taken the steps resumed at.
    if (static_cast<uint64_t>(optimizer.steps()) != step) {
      return absl::InvalidArgumentError(absl::StrCat("optimizer state has taken ",
                                                     optimizer.steps(), " steps but the shard is ",
                                                     "restored at step ", step));
    }
    // Everyone resumes at the loaded step; the loaded state becomes the authoritative one.
    ASSIGN_OR_RETURN(
        std::unique_ptr<PushPullShard> push_pull,
        PushPullShard::Create(PushPullConfig(spec, step), std::move(values),
                              optimizer.ExportState(), spec.optimizer, metrics.push_pull));
    return PushPull(std::move(push_pull));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ShardState> steps,
                   ShardState::Restore(StepsConfig(spec), step, std::move(values),
                                       std::move(optimizer), metrics.steps));
  return Synchronous(std::move(steps));
}

std::shared_ptr<Shard> Shard::Synchronous(std::shared_ptr<ShardState> steps) {
  return std::shared_ptr<Shard>(new Shard(std::move(steps), nullptr));
}

std::shared_ptr<Shard> Shard::PushPull(std::shared_ptr<PushPullShard> push_pull) {
  return std::shared_ptr<Shard>(new Shard(nullptr, std::move(push_pull)));
}

const PushCheck& Shard::check() const {
  return steps_ != nullptr ? steps_->check() : push_pull_->check();
}

void Shard::Close() {
  if (steps_ != nullptr) steps_->Close();
  if (push_pull_ != nullptr) push_pull_->Close();
}

void Shard::ReadParameters(std::function<void(absl::StatusOr<ParametersRead>)> done) const {
  if (push_pull_ != nullptr) {
    // Parameters and step read together: an update applied meanwhile cannot split them.
    const PushPullRead read = push_pull_->Read();
    done(ParametersRead{read.slowest_completed, read.values->size(),
                        [values = read.values](uint64_t offset, absl::Span<float> out) {
                          std::copy_n(values->begin() + offset, out.size(), out.begin());
                          return absl::OkStatus();
                        }});
    return;
  }
  // The read begins when the applier is between steps: now, or at the step's end.
  steps_->ReadInPlace([done = std::move(done)](absl::StatusOr<ShardState::Read> read) {
    if (!read.ok()) {
      done(read.status());
      return;
    }
    ShardState::Read shared = *std::move(read);
    const uint64_t step = shared->step();
    const uint64_t size = shared->size();
    done(ParametersRead{step, size,
                        [shared = std::move(shared)](uint64_t offset, absl::Span<float> out) {
                          return shared->CopyTo(offset, out);
                        }});
  });
}

uint64_t Shard::step() const {
  return steps_ != nullptr ? steps_->current_step() : push_pull_->Read().slowest_completed;
}

}  // namespace ringside::server
