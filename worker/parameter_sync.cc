#include "worker/parameter_sync.h"

#include "common/status_macros.h"

namespace ringside::worker {

absl::StatusOr<SyncTiming> SumThenUpdate::Step(int64_t step, absl::Span<float> gradient,
                                               absl::Span<float> params) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(sum_(step, gradient));
  const absl::Time summed = absl::Now();
  RETURN_IF_ERROR(optimizer_.Step(params, gradient));
  return SyncTiming{summed - start, absl::Now() - summed, absl::ZeroDuration()};
}

}  // namespace ringside::worker
