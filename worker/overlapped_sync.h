// A step whose sync overlaps the backward pass (--bucket_bytes, issue 27): the gradient is
// synchronised in buckets (worker/gradient_buckets.h), the last layers' first, each as soon as
// the backward pass has produced it, while the earlier layers are still being computed; the
// optimiser then runs once, when every bucket is back, exactly as SumThenUpdate's.
//
// Threads. The training thread computes and reports each layer (LayerReady); the sync thread
// (one, started by the constructor and joined by the destructor: none is started per step) runs
// the protocol's sum of each step Begin hands it. The protocol sees
// the gradient become final from the end, bucket by bucket: `AwaitReady(b)` blocks the sync
// thread until elements [b, K) are final. The ring allreduces each bucket as its own collective,
// one after the other; the parameter server pushes each shard its share last part first, each
// part as soon as it is final (server/ps/ps_client.h's SumAsReady). The two threads touch disjoint
// elements: the sync only those already final, the computer only those not yet reported.
//
// Failure: a sum that fails (a lost peer, a superseded generation) ends the sync thread with its
// status and the step fails at Finish, once the compute is over; a compute that fails calls
// Abandon, which releases the sync thread (its AwaitReady returns false) and joins it. No thread
// is left waiting either way, so the elastic trainer regroups as after any failed step.
//
// Thread-safety: Begin, Finish, Abandon and Step on the training thread; LayerReady on the thread
// that computes (the training thread). Errors: the sum's, CANCELLED for an abandoned step, or the
// optimiser's INVALID_ARGUMENT.
#ifndef RINGSIDE_WORKER_OVERLAPPED_SYNC_H_
#define RINGSIDE_WORKER_OVERLAPPED_SYNC_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "worker/gradient_buckets.h"
#include "worker/parameter_sync.h"

namespace ringside::worker {

// Blocks until elements [begin, K) of the step's gradient are final; returns where the final
// part begins then (at most `begin`), or nothing when the step was abandoned (they never will be).
using AwaitReady = std::function<std::optional<uint64_t>(uint64_t begin)>;
// A protocol's sum of a gradient that becomes final from the end (on the sync thread).
using SumReadyShares =
    std::function<absl::Status(int64_t step, absl::Span<float> gradient, const AwaitReady& ready)>;
// Runs on the computing thread for each bucket as it is complete, before the sync may read it
// (keeping a sampled share, dividing it for the wire); may be null.
using PrepareBucket = std::function<void(int64_t step, int bucket, ElementRange range)>;

class OverlappedSync final : public ParameterSync {
 public:
  // `buckets` as PlanBuckets gives them; `optimizer` must outlive this.
  OverlappedSync(SyncMode mode, std::vector<GradientBucket> buckets, SumReadyShares sum,
                 PrepareBucket prepare, Optimizer& optimizer);
  ~OverlappedSync() override;  // abandons a step still in flight, then ends the sync thread

  SyncMode mode() const override { return mode_; }
  OverlappedSync* overlapped() override { return this; }
  const std::vector<GradientBucket>& buckets() const { return buckets_; }

  // Starts step `step`'s sync over `gradient` (which must outlive Finish or Abandon).
  void Begin(int64_t step, absl::Span<float> gradient);
  // The backward pass finished `layer` (last first, each once).
  void LayerReady(int layer);
  // The compute failed: the sync ends without the buckets not yet ready.
  void Abandon();
  // After the compute ended at `computed`: waits for every bucket's sum, then applies the
  // optimiser to `params`. The timing's `overlap` is how long before `computed` the sync began.
  absl::StatusOr<SyncTiming> Finish(absl::Span<float> params, absl::Time computed);

  // Not overlapped: every bucket at once (ParameterSync's contract).
  absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                  absl::Span<float> params) override;

 private:
  std::optional<uint64_t> AwaitReadyFrom(uint64_t begin);
  // The sync thread: runs each step's sum that Begin hands it, until the destructor.
  void SyncLoop();
  // Until the step's sum has returned; its status.
  absl::Status AwaitSummed();

  const SyncMode mode_;
  const std::vector<GradientBucket> buckets_;
  const SumReadyShares sum_;
  const PrepareBucket prepare_;
  Optimizer& optimizer_;

  // The training thread's: the step in flight.
  int64_t step_ = 0;
  absl::Span<float> gradient_;
  std::optional<BucketTracker> tracker_;  // set between Begin and Finish or Abandon

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;     // a step handed over, not yet taken
  bool summed_ ABSL_GUARDED_BY(mu_) = true;       // its sum returned
  uint64_t ready_from_ ABSL_GUARDED_BY(mu_) = 0;  // [ready_from_, K) is final
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> first_ready_ ABSL_GUARDED_BY(mu_);  // the first bucket's
  absl::Time summed_at_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread sync_thread_;  // last: starts once everything above is built
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_OVERLAPPED_SYNC_H_
