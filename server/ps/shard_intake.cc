// ShardState's intake (shard_state.h): the push calls, which validate a worker's segments and
// keep their payloads as received, and the hand-over of each segment every share covers to the
// applier.
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "server/ps/ps_client.h"
#include "server/ps/shard_state.h"

namespace ringside::server {
// A worker within its push window (at most 1.25 windows pushed and not answered, in 16-bit
// elements) never holds more of its share unsummed than a shard keeps, nor runs further ahead of
// the sum (AddSegment's refusals).
static_assert(kMaxPsWindowBytes / 2 + kMaxPsWindowBytes / 2 / 4 <= kHeldShareElements);
static_assert(kMaxPsWindowBytes / 2 + kMaxPsWindowBytes / 2 / 4 <= kSumBufferElements);

absl::Status ShardState::BeginPush(uint64_t generation, int worker, uint64_t step,
                                   uint64_t range_elements, WireDtype dtype, bool descending,
                                   const Compression& compression) {
  RETURN_IF_ERROR(check_.Header(generation, worker, range_elements));
  if (compression.kind != CompressionKind::kNone) {
    const char* unfit = dtype != WireDtype::kFp32 ? "in a 16-bit dtype"
                        : descending              ? "last part first"
                        : range_elements_ == 0    ? "for an empty range"
                                                  : nullptr;
    if (unfit != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", worker, " pushes step ", step,
                       " with --compression=", CompressionText(compression), " ", unfit,
                       ": a compressed step is float32, in order, of a range that is not empty"));
    }
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckStep(step));
  RETURN_IF_ERROR(AgreeOnDtypeLocked(worker, dtype, descending, compression));
  RETURN_IF_ERROR(shares_[worker].Begin(worker, step));
  if (first_push_ == absl::InfinitePast()) first_push_ = absl::Now();
  return absl::OkStatus();
}

absl::Status ShardState::AgreeOnDtypeLocked(int worker, WireDtype dtype, bool descending,
                                            const Compression& compression) {
  const bool any_began = std::any_of(
      shares_.begin(), shares_.end(),
      [](const ReceivedShare& share) { return share.state() != ReceivedShare::State::kIdle; });
  const Compression step_compression = codec_ == nullptr ? Compression{} : codec_->compression;
  if (!any_began) {
    dtype_ = dtype;
    descending_ = descending;
    codec_ = nullptr;
    if (compression.kind != CompressionKind::kNone) {
      // One codec object while the job's stays the same: the applier's error feedback is kept
      // for as long as it is.
      if (last_codec_ == nullptr || last_codec_->compression != compression) {
        last_codec_ = std::make_shared<const StepCodec>(
            StepCodec{compression, CompressionText(compression), MakeGradientCodec(compression)});
      }
      codec_ = last_codec_;
    }
  } else if (compression != step_compression) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", worker, " pushes step ", collecting_,
        " with --compression=", CompressionText(compression), " but the others with ",
        CompressionText(step_compression), "; every member must use the job's --compression"));
  } else if (descending != descending_) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " pushes step ", collecting_,
                     descending ? " last part first" : " in order",
                     " but the others do not; every member must use the job's --bucket_bytes"));
  } else if (dtype != dtype_) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " pushes step ", collecting_, " as ", WireDtypeName(dtype),
                     " but the others as ", WireDtypeName(dtype_),
                     "; every member must use the job's --wire_dtype"));
  }
  return absl::OkStatus();
}

absl::Status ShardState::AddSegment(int worker, uint64_t step, uint64_t offset,
                                    absl::string_view payload) {
  auto copy = std::make_shared<const std::string>(payload);
  const absl::string_view bytes = *copy;
  return AddSegment(worker, step, offset, {bytes}, std::move(copy));
}

absl::Status ShardState::AddSegment(int worker, uint64_t step, uint64_t offset,
                                    std::vector<absl::string_view> pieces,
                                    std::shared_ptr<const void> owner) {
  size_t bytes = 0;
  for (absl::string_view piece : pieces) bytes += piece.size();
  return KeepSegment(worker, step, offset, bytes, /*compressed=*/false, std::move(pieces),
                     std::move(owner));
}

absl::Status ShardState::KeepSegment(int worker, uint64_t step, uint64_t offset, uint64_t bytes,
                                     bool compressed, std::vector<absl::string_view> pieces,
                                     std::shared_ptr<const void> owner) {
  RETURN_IF_ERROR(check_.Worker(worker));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckStep(step));
  ReceivedShare& share = shares_[worker];
  if (share.state() == ReceivedShare::State::kPushing && compressed != (codec_ != nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " sent ", compressed ? "a compressed" : "an uncompressed",
                     " segment in a push of step ", step,
                     compressed ? ", which is not compressed" : ", which is compressed"));
  }
  // Under the lock: the dtype and order are the step's.
  ASSIGN_OR_RETURN(const uint64_t count,
                   share.Check(check_, worker, step, {dtype_, descending_, range_elements_}, offset,
                               bytes, pieces, /*decoded=*/compressed));
  if (compressed) RETURN_IF_ERROR(AgreeOnSegmentLocked(worker, offset, count));
  // What of this step the applier has summed, in push order: those payloads are released.
  const uint64_t summed =
      partial_.sum != nullptr && partial_.step == collecting_ ? partial_.end : 0;
  if (share.received() + count - summed > held_elements_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "worker ", worker, "'s segment of ", count, " elements would hold ",
        share.received() + count - summed, " elements of its share unsummed; the shard holds ",
        held_elements_, " (a push window of at most ", kMaxPsWindowBytes, " bytes fits)"));
  }
  // Summing these elements may reuse the sum's slots of elements this worker has not been sent.
  if (share.received() + count - answered_[worker] > sum_elements_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("worker ", worker, "'s segment of ", count, " elements runs ",
                     share.received() + count - answered_[worker],
                     " elements ahead of the sum it was answered; the shard keeps ", sum_elements_,
                     " of it (a push window of at most ", kMaxPsWindowBytes, " bytes fits)"));
  }
  share.Keep(offset, count, std::move(pieces), std::move(owner));
  HandOverLocked();
  return absl::OkStatus();
}

absl::Status ShardState::FinishPush(int worker, uint64_t step) {
  RETURN_IF_ERROR(check_.Worker(worker));
  absl::MutexLock lock(&mu_);
  // Complete here: every share of it was, this one included.
  if (step < collecting_) return absl::OkStatus();
  RETURN_IF_ERROR(CheckStep(step));
  RETURN_IF_ERROR(shares_[worker].Finish(worker, step, range_elements_));
  HandOverLocked();  // an empty range has no segment to complete it
  return absl::OkStatus();
}

absl::Status ShardState::AgreeOnSegmentLocked(int worker, uint64_t offset, uint64_t count) {
  // The step's first segment sets the length; every later one holds it, the range's last piece
  // excepted.
  if (codec_segment_ == 0) {
    if (count == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", worker, "'s compressed segment at ", offset, " of ", count,
                       " elements cannot set its step's segment length"));
    }
    codec_segment_ = count;
    return absl::OkStatus();
  }
  const uint64_t expected = std::min(codec_segment_, range_elements_ - offset);
  if (count != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", worker, "'s compressed segment at ", offset, " holds ", count, " elements, not ",
        expected, ": every segment of a compressed step holds ", codec_segment_,
        " (the range's last piece excepted), as the step's first one does"));
  }
  return absl::OkStatus();
}

void ShardState::CollectNextStepLocked() {
  for (ReceivedShare& share : shares_) share.Reset();
  std::fill(answered_.begin(), answered_.end(), 0);
  codec_ = nullptr;  // the next step's first push says its own
  codec_segment_ = 0;
  ++collecting_;
  handed_ = 0;
  first_push_ = absl::InfinitePast();
}

void ShardState::HandOverLocked() {
  // Every share holds [0, ready); the step is complete once every worker began and holds all.
  uint64_t ready = range_elements_;
  bool all_began = true;
  for (const ReceivedShare& share : shares_) {
    ready = std::min(ready, share.received());
    all_began = all_began && share.state() != ReceivedShare::State::kIdle;
  }
  const bool complete = all_began && ready == range_elements_;
  if (!complete && ready <= handed_) return;
  Segment segment;
  segment.step = collecting_;
  // `ready` and `handed_` count in push order; the applier works on the range's own elements.
  segment.begin = descending_ ? range_elements_ - ready : handed_;
  segment.end = descending_ ? range_elements_ - handed_ : ready;
  segment.known = ready;
  segment.last = complete;
  segment.dtype = dtype_;
  segment.codec = codec_;
  segment.codec_segment = codec_segment_;
  segment.held = HandHeldLocked(handed_, ready);
  handed_ = ready;
  if (complete) {
    segment.first_push = first_push_;
    segment.last_push = absl::Now();
    CollectNextStepLocked();
  }
  segments_.push_back(std::move(segment));
  segment_ready_.Signal();
}

std::vector<HeldPayloads> ShardState::HandHeldLocked(uint64_t from, uint64_t to) {
  std::vector<HeldPayloads> held;
  held.reserve(shares_.size());
  for (ReceivedShare& share : shares_) held.push_back(share.Hand(from, to, descending_));
  return held;
}

void ShardState::AbandonPush(int worker, uint64_t step) {
  if (!check_.Worker(worker).ok()) return;
  ReadyCallbacks ready;
  std::vector<Reader> readers;
  absl::Status lost;
  {
    absl::MutexLock lock(&mu_);
    ReceivedShare& share = shares_[worker];
    if (step != collecting_ || share.state() == ReceivedShare::State::kIdle || lost_ ||
        share.received() == range_elements_) {
      return;  // nothing open, or a complete share: it counts
    }
    if (handed_ == 0) {
      share.Reset();  // nothing of the step summed yet: the push may be made again
      answered_[worker] = 0;
      return;
    }
    // Part of the step was summed with this share: the rest never can be.
    lost_ = true;
    lost_worker_ = worker;
    ready = ReadyLocked();
    readers.swap(readers_);  // the parameters will never be between steps again
    lost = LostStatus();
  }
  RefuseReaders(std::move(readers), lost);
  for (auto& [done, summed] : ready) done(std::move(summed));
}

void ShardState::Answered(int worker, uint64_t step, uint64_t sent) {
  if (!check_.Worker(worker).ok()) return;
  absl::MutexLock lock(&mu_);
  // An earlier step's reply: its worker has not begun the step collected.
  if (step != collecting_) return;
  answered_[worker] = std::max(answered_[worker], sent);
}

}  // namespace ringside::server
