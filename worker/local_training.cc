#include "worker/local_training.h"

#include "common/model_spec.h"
#include "common/status_macros.h"
#include "worker/data_parallel.h"

namespace ringside::worker {

absl::StatusOr<TrainingResult> TrainLocally(const TrainingOptions& options,
                                            const StepObserver& observer) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(std::unique_ptr<LocalSync> sync,
                   LocalSync::Create(options.optimizer, spec.parameter_count()));
  return TrainDataParallel(options, WorkerSlot{0, 1}, *sync, /*metrics=*/nullptr, observer);
}

}  // namespace ringside::worker
