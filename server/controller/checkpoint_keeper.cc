#include "server/controller/checkpoint_keeper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside::server {

absl::StatusOr<std::unique_ptr<CheckpointKeeper>> CheckpointKeeper::Open(const std::string& dir,
                                                                         std::string job,
                                                                         CheckpointShape shape,
                                                                         Metrics* metrics,
                                                                         std::ostream& log) {
  ASSIGN_OR_RETURN(CheckpointStore store, CheckpointStore::Open(dir));
  std::shared_ptr<const Checkpoint> restored;
  absl::StatusOr<LoadedCheckpoint> loaded = store.LoadNewest();
  if (loaded.ok()) {
    for (const std::string& skipped : loaded->skipped) {
      log << "controller: skipping a damaged checkpoint: " << skipped << "\n";
    }
    const Checkpoint& checkpoint = loaded->checkpoint;
    if (checkpoint.job != job || checkpoint.parameters.size() != shape.parameters ||
        checkpoint.optimizer_state.size() != shape.optimizer_state) {
      return absl::FailedPreconditionError(absl::StrCat(
          loaded->path, " was written for another job (", QuoteForLog(checkpoint.job), ", ",
          checkpoint.parameters.size(),
          " parameters); this "
          "controller runs ",
          QuoteForLog(job), " with ", shape.parameters,
          ": start it with that checkpoint's job flags, or with another --checkpoint_dir"));
    }
    log << "controller: resuming from " << loaded->path << " (step " << checkpoint.step << ")\n";
    if (metrics != nullptr) {
      metrics->Checkpoints("restored").Increment();
      metrics->CheckpointBytes("restored")
          .Increment(static_cast<double>(shape.state_elements() * sizeof(float)));
    }
    restored = std::make_shared<const Checkpoint>(std::move(loaded->checkpoint));
  } else if (loaded.status().code() != absl::StatusCode::kNotFound) {
    return loaded.status();  // every checkpoint damaged, or unreadable: never start over silently
  }
  log.flush();
  std::unique_ptr<CheckpointKeeper> keeper(
      new CheckpointKeeper(std::move(store), std::move(job), shape, metrics, log));
  absl::MutexLock lock(&keeper->mu_);
  keeper->newest_ = std::move(restored);
  return keeper;
}

CheckpointKeeper::CheckpointKeeper(CheckpointStore store, std::string job, CheckpointShape shape,
                                   Metrics* metrics, std::ostream& log)
    : store_(std::move(store)), job_(std::move(job)), shape_(shape), metrics_(metrics), log_(log) {
  writer_ = std::thread([this] { WriteLoop(); });
}

CheckpointKeeper::~CheckpointKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_.join();
}

absl::Status CheckpointKeeper::Accept(uint64_t step, std::vector<float> parameters,
                                      std::vector<float> optimizer_state) {
  if (parameters.size() != shape_.parameters || optimizer_state.size() != shape_.optimizer_state) {
    return absl::InvalidArgumentError(
        absl::StrCat("a checkpoint of ", parameters.size(), " parameters and ",
                     optimizer_state.size(), " optimiser values does not fit the job (",
                     shape_.parameters, " and ", shape_.optimizer_state, ")"));
  }
  auto checkpoint = std::make_shared<Checkpoint>();
  checkpoint->step = step;
  checkpoint->job = job_;
  checkpoint->parameters = std::move(parameters);
  checkpoint->optimizer_state = std::move(optimizer_state);
  absl::MutexLock lock(&mu_);
  if (newest_ != nullptr && step <= newest_->step) {
    return absl::FailedPreconditionError(
        absl::StrCat("the controller already holds the checkpoint of step ", newest_->step,
                     "; step ", step, " is not newer"));
  }
  newest_ = checkpoint;
  pending_ = std::move(checkpoint);  // a pending older one is superseded, never written
  return absl::OkStatus();
}

std::shared_ptr<const Checkpoint> CheckpointKeeper::newest() const {
  absl::MutexLock lock(&mu_);
  return newest_;
}

uint64_t CheckpointKeeper::newest_step() const {
  absl::MutexLock lock(&mu_);
  return newest_ == nullptr ? 0 : newest_->step;
}

void CheckpointKeeper::AwaitWritten() const {
  absl::MutexLock lock(&mu_);
  auto written = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_ == nullptr && !writing_;
  };
  mu_.Await(absl::Condition(&written));
}

void CheckpointKeeper::WriteLoop() {
  while (true) {
    std::shared_ptr<const Checkpoint> checkpoint;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return pending_ != nullptr || stopping_;
      };
      mu_.Await(absl::Condition(&work));
      if (pending_ == nullptr) return;  // stopping, nothing left to write
      checkpoint = std::move(pending_);
      writing_ = true;
    }
    absl::StatusOr<WrittenCheckpoint> written = store_.Write(*checkpoint);
    if (written.ok()) {
      log_ << "controller: checkpoint of step " << checkpoint->step << " written to "
           << written->path << " (" << written->bytes << " bytes)";
      if (!written->pruned.empty()) log_ << "; pruned " << absl::StrJoin(written->pruned, ", ");
      log_ << "\n";
      if (metrics_ != nullptr) {
        metrics_->Checkpoints("written").Increment();
        metrics_->CheckpointBytes("written").Increment(static_cast<double>(written->bytes));
      }
    } else {
      log_ << "controller: cannot write the checkpoint of step " << checkpoint->step
           << " (the previous one on disk stays the newest): " << written.status() << "\n";
    }
    log_.flush();
    absl::MutexLock lock(&mu_);
    writing_ = false;
  }
}

}  // namespace ringside::server
