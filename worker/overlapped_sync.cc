#include "worker/overlapped_sync.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace ringside::worker {

OverlappedSync::OverlappedSync(SyncMode mode, std::vector<GradientBucket> buckets,
                               SumReadyShares sum, PrepareBucket prepare, Optimizer& optimizer)
    : mode_(mode),
      buckets_(std::move(buckets)),
      sum_(std::move(sum)),
      prepare_(std::move(prepare)),
      optimizer_(optimizer),
      sync_thread_([this] { SyncLoop(); }) {}

OverlappedSync::~OverlappedSync() {
  Abandon();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  sync_thread_.join();
}

void OverlappedSync::SyncLoop() {
  while (true) {
    int64_t step = 0;
    absl::Span<float> gradient;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](OverlappedSync* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->pending_ || self->stopping_;
          },
          this));
      if (!pending_) return;  // stopping, with no step handed over
      pending_ = false;
      step = step_;
      gradient = gradient_;
    }
    absl::Status status =
        sum_(step, gradient, [this](uint64_t begin) { return AwaitReadyFrom(begin); });
    absl::MutexLock lock(&mu_);
    summed_at_ = absl::Now();
    status_ = std::move(status);
    summed_ = true;
  }
}

void OverlappedSync::Begin(int64_t step, absl::Span<float> gradient) {
  Abandon();  // a step begun and never finished (a broken invariant of the caller) ends here
  step_ = step;
  gradient_ = gradient;
  tracker_.emplace(buckets_);
  absl::MutexLock lock(&mu_);
  ready_from_ = gradient.size();
  abandoned_ = false;
  first_ready_.reset();
  status_ = absl::OkStatus();
  summed_ = false;
  pending_ = true;
}

void OverlappedSync::LayerReady(int layer) {
  if (!tracker_.has_value()) return;
  const int bucket = tracker_->LayerReady(layer);
  if (bucket < 0) return;
  const ElementRange range = buckets_[bucket].range;
  if (prepare_) prepare_(step_, bucket, range);
  absl::MutexLock lock(&mu_);
  ready_from_ = std::min<uint64_t>(ready_from_, range.begin);
  if (!first_ready_.has_value()) first_ready_ = absl::Now();
}

std::optional<uint64_t> OverlappedSync::AwaitReadyFrom(uint64_t begin) {
  absl::MutexLock lock(&mu_);
  const auto ready_or_abandoned = [this, begin]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return abandoned_ || ready_from_ <= begin;
  };
  mu_.Await(absl::Condition(&ready_or_abandoned));
  if (ready_from_ > begin) return std::nullopt;
  return ready_from_;
}

void OverlappedSync::Abandon() {
  if (!tracker_.has_value()) return;
  {
    absl::MutexLock lock(&mu_);
    abandoned_ = true;
  }
  AwaitSummed().IgnoreError();  // the caller reports the compute's error, not the sync's
}

absl::Status OverlappedSync::AwaitSummed() {
  tracker_.reset();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&summed_));
  return status_;
}

absl::StatusOr<SyncTiming> OverlappedSync::Finish(absl::Span<float> params, absl::Time computed) {
  if (!tracker_.has_value()) {
    return absl::FailedPreconditionError("no overlapped step in flight");
  }
  const bool complete = tracker_->done();
  if (!complete) {
    absl::MutexLock lock(&mu_);
    abandoned_ = true;  // the buckets not reported would never be summed
  }
  RETURN_IF_ERROR(AwaitSummed());
  if (!complete) {
    return absl::InternalError("the gradient computer did not report every layer ready");
  }
  absl::Time began, summed;
  {
    absl::MutexLock lock(&mu_);
    began = first_ready_.value_or(computed);
    summed = summed_at_;
  }
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(optimizer_.Step(params, gradient_));
  return SyncTiming{summed - began, absl::Now() - start,
                    std::max(absl::ZeroDuration(), computed - began)};
}

absl::StatusOr<SyncTiming> OverlappedSync::Step(int64_t step, absl::Span<float> gradient,
                                                absl::Span<float> params) {
  Begin(step, gradient);
  for (const GradientBucket& bucket : buckets_) {
    for (int l = bucket.last_layer; l >= bucket.first_layer; --l) LayerReady(l);
  }
  return Finish(params, absl::Now());
}

}  // namespace ringside::worker
