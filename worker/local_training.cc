#include "worker/local_training.h"

#include "common/model_spec.h"
#include "common/status_macros.h"
#include "worker/data_parallel.h"
#include "worker/parameter_sync.h"

namespace ringside::worker {

absl::StatusOr<TrainingResult> TrainLocally(const TrainingOptions& options,
                                            const StepObserver& observer) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(options.optimizer, spec.parameter_count()));
  // world = 1: the share is already the global gradient, so the sum is the share itself.
  SumThenUpdate sync(
      SyncMode::kRing, [](int64_t, absl::Span<float>) { return absl::OkStatus(); }, optimizer);
  return TrainDataParallel(options, WorkerSlot{0, 1}, sync, /*metrics=*/nullptr, observer);
}

}  // namespace ringside::worker
