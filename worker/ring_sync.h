// Ring mode of data-parallel training: the workers' gradient shares are summed with one ring
// allreduce of the whole fused gradient buffer (which gives the global mean, see
// train/data_parallel.h), then every worker applies the same optimiser step to the same
// parameters, so parameters stay bit-identical across workers without ever being sent.
// Thread-compatible. Errors: the allreduce's, or the optimiser's INVALID_ARGUMENT.
#ifndef RINGSIDE_RING_RING_SYNC_H_
#define RINGSIDE_RING_RING_SYNC_H_

#include <cstdint>

#include "common/optimizer.h"
#include "common/parameter_sync.h"
#include "ring/allreduce.h"
#include "ring/collective.h"

namespace ringside::worker {

class RingSync final : public ParameterSync {
 public:
  // `member` must be connected; it and `optimizer` (the worker's, whose state may move between
  // generations) must outlive this object. Step t's allreduce is collective
  // `first_collective + t`: every worker of the generation numbers alike.
  RingSync(ring::Collective& member, Optimizer& optimizer, ring::AllreduceOptions options,
           uint64_t first_collective = 1);
  SyncMode mode() const override { return SyncMode::kRing; }
  absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                  absl::Span<float> params) override;

 private:
  ring::Collective& member_;
  Optimizer& optimizer_;
  ring::AllreduceOptions options_;
  uint64_t first_collective_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_RING_RING_SYNC_H_
