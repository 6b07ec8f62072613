#include "ring/ring_sync.h"

#include "common/status_macros.h"

namespace ringside::worker {

RingSync::RingSync(ring::Collective& member, Optimizer& optimizer, ring::AllreduceOptions options,
                   uint64_t first_collective)
    : member_(member),
      optimizer_(optimizer),
      options_(options),
      first_collective_(first_collective) {
  options_.op = ring::ReduceOp::kSum;  // shares are pre-scaled by the global batch
}

absl::StatusOr<SyncTiming> RingSync::Step(int64_t step, absl::Span<float> gradient,
                                          absl::Span<float> params) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(
      member_.Allreduce(first_collective_ + static_cast<uint64_t>(step), gradient, options_));
  const absl::Time reduced = absl::Now();
  RETURN_IF_ERROR(optimizer_.Step(params, gradient));
  return SyncTiming{reduced - start, absl::Now() - reduced};
}

}  // namespace ringside::worker
