// ShardState's reads of its parameters (shard_state.h): ReadInPlace and what it hands out, the
// ParameterRead that copies the live range piece by piece while the applier goes on.
#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

bool ShardState::BetweenStepsLocked() const {
  return !applying_ && segments_.empty() && partial_.sum == nullptr;
}

absl::Status ShardState::UnreadableLocked() const {
  if (closed_) {
    return absl::AbortedError(absl::StrCat(PsShardName(config_.shard),
                                           " moved to a new generation before a read of its "
                                           "parameters; take the latest assignment"));
  }
  if (lost_) return LostStatus();
  return absl::OkStatus();
}

void ShardState::RefuseReaders(std::vector<Reader> readers, const absl::Status& why) {
  for (Reader& done : readers) done(why);
}

ShardState::Read ShardState::NewReadLocked() {
  reads_.erase(
      std::remove_if(reads_.begin(), reads_.end(),
                     [](const std::weak_ptr<ParameterRead>& read) { return read.expired(); }),
      reads_.end());
  Read read(new ParameterRead(current_.step, &values_));
  reads_.push_back(read);
  return read;
}

std::vector<ShardState::Read> ShardState::ReadsOfLocked(uint64_t step, bool remove) {
  std::vector<Read> found;
  for (auto it = reads_.begin(); it != reads_.end();) {
    Read read = it->lock();
    const bool of_step = read != nullptr && read->step() == step;
    if (of_step) found.push_back(std::move(read));
    it = (remove && of_step) || it->expired() ? reads_.erase(it) : it + 1;
  }
  return found;
}

void ShardState::ReadInPlace(Reader done) {
  absl::StatusOr<Read> answer;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status unreadable = UnreadableLocked(); !unreadable.ok()) {
      answer = std::move(unreadable);
    } else if (!BetweenStepsLocked()) {
      readers_.push_back(std::move(done));
      return;
    } else {
      answer = NewReadLocked();
    }
  }
  done(std::move(answer));
}

void ShardState::ReadApplied(std::function<void(absl::StatusOr<Applied>)> done) {
  ReadInPlace([done = std::move(done)](absl::StatusOr<Read> read) {
    if (!read.ok()) {
      done(read.status());
      return;
    }
    auto values = std::make_shared<std::vector<float>>((*read)->size());
    if (absl::Status copied = (*read)->CopyTo(0, absl::MakeSpan(*values)); !copied.ok()) {
      done(copied);
      return;
    }
    done(Applied{(*read)->step(), std::move(values)});
  });
}

absl::Status ShardState::ParameterRead::CopyTo(uint64_t offset, absl::Span<float> out) {
  absl::MutexLock lock(&mu_);
  if (!aborted_.ok()) return aborted_;
  if (offset != taken_ || out.size() > size_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a read of elements [", offset, ", +", out.size(), ") after [0, ", taken_, ") of ", size_));
  }
  uint64_t at = offset;
  const uint64_t end = offset + out.size();
  while (at < end) {
    // The saved piece holding `at`, else the live values up to the next saved piece.
    auto next = saved_.upper_bound(at);
    if (next != saved_.begin() && std::prev(next)->first + std::prev(next)->second.size() > at) {
      const auto& [first, piece] = *std::prev(next);
      const uint64_t count = std::min<uint64_t>(end, first + piece.size()) - at;
      std::copy_n(piece.begin() + (at - first), count, out.begin() + (at - offset));
      at += count;
      continue;
    }
    const uint64_t stop = next == saved_.end() ? end : std::min<uint64_t>(end, next->first);
    if (live_ == nullptr) {
      return absl::InternalError(
          absl::StrCat("elements from ", at, " of a read were neither saved nor live"));
    }
    std::copy(live_->begin() + at, live_->begin() + stop, out.begin() + (at - offset));
    at = stop;
  }
  taken_ = end;
  // Pieces wholly taken are not read again.
  while (!saved_.empty() && saved_.begin()->first + saved_.begin()->second.size() <= taken_) {
    saved_elements_ -= saved_.begin()->second.size();
    saved_.erase(saved_.begin());
  }
  return absl::OkStatus();
}

void ShardState::ParameterRead::SaveBefore(uint64_t begin, uint64_t end) {
  absl::MutexLock lock(&mu_);
  begin = std::max(begin, taken_);
  if (live_ == nullptr || !aborted_.ok() || begin >= end) return;
  if (saved_elements_ + (end - begin) > kMaxReadSavedElements) {
    live_ = nullptr;
    saved_.clear();
    saved_elements_ = 0;
    aborted_ = absl::AbortedError(absl::StrCat(
        "the shard applied the step after ", step_, " faster than the read was sent (more than ",
        kMaxReadSavedBytes, " bytes saved for it); read again"));
    return;
  }
  saved_[begin].assign(live_->begin() + begin, live_->begin() + end);
  saved_elements_ += end - begin;
}

void ShardState::ParameterRead::Complete() {
  absl::MutexLock lock(&mu_);
  live_ = nullptr;
}

void ShardState::ParameterRead::Abort(absl::Status why) {
  absl::MutexLock lock(&mu_);
  live_ = nullptr;
  saved_.clear();
  saved_elements_ = 0;
  if (aborted_.ok()) aborted_ = std::move(why);
}

absl::StatusOr<ShardState::Applied> ShardState::applied() {
  absl::Notification answered;
  absl::StatusOr<Applied> result;
  ReadApplied([&](absl::StatusOr<Applied> answer) {
    result = std::move(answer);
    answered.Notify();
  });
  answered.WaitForNotification();
  return result;
}

absl::StatusOr<Values> ShardState::parameters() {
  ASSIGN_OR_RETURN(Applied applied, this->applied());
  return applied.values;
}

uint64_t ShardState::current_step() const {
  absl::MutexLock lock(&mu_);
  return current_.step;
}

}  // namespace ringside::server
