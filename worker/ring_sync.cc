#include "worker/ring_sync.h"

#include "common/status_macros.h"

namespace ringside::worker {

absl::StatusOr<std::unique_ptr<RingSync>> RingSync::Create(ring::RingMember& member,
                                                           const OptimizerConfig& config,
                                                           size_t parameters,
                                                           ring::AllreduceOptions options) {
  ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::Create(config, parameters));
  options.op = ring::ReduceOp::kSum;  // shares are pre-scaled by the global batch
  return std::unique_ptr<RingSync>(new RingSync(member, std::move(optimizer), options));
}

absl::StatusOr<SyncTiming> RingSync::Step(int64_t step, absl::Span<float> gradient,
                                          absl::Span<float> params) {
  const absl::Time start = absl::Now();
  // Collective numbers start at 1 and rise with the step on every worker alike.
  RETURN_IF_ERROR(member_.Allreduce(static_cast<uint64_t>(step) + 1, gradient, options_));
  const absl::Time reduced = absl::Now();
  RETURN_IF_ERROR(optimizer_.Step(params, gradient));
  return SyncTiming{reduced - start, absl::Now() - reduced};
}

}  // namespace ringside::worker
