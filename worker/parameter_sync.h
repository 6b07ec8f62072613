// The seam between the training loop (train/data_parallel.h) and the protocols that share
// gradients (ring/ring_sync.h, ps/ps_sync.h): each protocol implements ParameterSync, the loop
// calls it once per step. Kept here so the protocols need nothing of the trainer.
#ifndef RINGSIDE_COMMON_PARAMETER_SYNC_H_
#define RINGSIDE_COMMON_PARAMETER_SYNC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"

namespace ringside::worker {

struct SyncTiming {
  absl::Duration sync;    // exchanging gradients or parameters
  absl::Duration update;  // applying the optimiser locally (zero when a server does it)
};

// Turns this worker's gradient share for one step into the step's updated parameters.
class ParameterSync {
 public:
  virtual ~ParameterSync() = default;
  virtual SyncMode mode() const = 0;
  // `gradient` may be overwritten. On success `params` holds step `step`'s updated parameters.
  virtual absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                          absl::Span<float> params) = 0;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_COMMON_PARAMETER_SYNC_H_
