// The seam between the training loop (worker/data_parallel.h) and the protocols that share
// gradients (ring/collective.h, server/ps/ps_client.h). A protocol only sums the workers' shares;
// every worker then applies the job's optimiser to the same sum here, in one place, so the
// parameters stay identical without being sent and neither protocol needs the optimiser.
#ifndef RINGSIDE_WORKER_PARAMETER_SYNC_H_
#define RINGSIDE_WORKER_PARAMETER_SYNC_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/optimizer.h"

namespace ringside::worker {

struct SyncTiming {
  absl::Duration sync;    // exchanging gradients or parameters
  absl::Duration update;  // applying the optimiser locally (zero when a server does it)
  // An overlapped step (worker/overlapped_sync.h): how long before the compute's end the sync
  // began; zero when it began after (every other sync).
  absl::Duration overlap = absl::ZeroDuration();
};

class OverlappedSync;

// Turns this worker's gradient share for one step into the step's updated parameters.
class ParameterSync {
 public:
  virtual ~ParameterSync() = default;
  virtual SyncMode mode() const = 0;
  // `gradient` may be overwritten. On success `params` holds step `step`'s updated parameters.
  virtual absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                          absl::Span<float> params) = 0;
  // Non-null when the sync can overlap the backward pass (TrainStep then drives it bucket by
  // bucket instead of calling Step).
  virtual OverlappedSync* overlapped() { return nullptr; }
  // The step this worker trains next after step `step`: the next one, except under backup
  // workers, where a worker the others left behind skips to the parameters' step
  // (worker/push_pull_sync.h).
  virtual int64_t NextStep(int64_t step) const { return step + 1; }
};

// A protocol's part of a step: leaves the sum of every worker's share of step `step` in
// `gradient` (a ring allreduce, or the shards' pushes and replies).
using SumShares = std::function<absl::Status(int64_t step, absl::Span<float> gradient)>;

// Ring and PS mode alike: the protocol sums, then this worker applies the optimiser to the sum.
// Thread-compatible. Errors: the protocol's, or the optimiser's INVALID_ARGUMENT.
class SumThenUpdate final : public ParameterSync {
 public:
  // `optimizer` (the worker's, whose state may move between generations) must outlive this.
  SumThenUpdate(SyncMode mode, SumShares sum, Optimizer& optimizer)
      : mode_(mode), sum_(std::move(sum)), optimizer_(optimizer) {}
  SyncMode mode() const override { return mode_; }
  absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                  absl::Span<float> params) override;

 private:
  SyncMode mode_;
  SumShares sum_;
  Optimizer& optimizer_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_PARAMETER_SYNC_H_
