#include "worker/local_training.h"

#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/model_spec.h"

namespace ringside::worker {

absl::StatusOr<TrainingResult> TrainLocally(const TrainingOptions& options,
                                            const StepObserver& observer) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(const DataSpec data_spec, ParseDataSpec(options.data));
  ASSIGN_OR_RETURN(const Dataset data, LoadDataset(data_spec, spec, options.seed));
  ASSIGN_OR_RETURN(const BatchSchedule schedule,
                   BatchSchedule::Create(data.rows(), options.batch_size, options.seed));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer,
                   MakeGradientComputer(options.device, spec));
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(options.optimizer, spec.parameter_count()));

  TrainingResult result;
  result.parameters = InitialParameters(spec, options.seed);
  std::vector<float> gradient(spec.parameter_count());
  OwnedBatch batch;
  for (int64_t step = 0; step < options.steps; ++step) {
    GatherRows(data, schedule.GlobalBatchRows(step), batch);
    ASSIGN_OR_RETURN(result.last_step, computer->ComputeGradient(result.parameters, batch.view(),
                                                                 absl::MakeSpan(gradient)));
    RETURN_IF_ERROR(optimizer.Step(absl::MakeSpan(result.parameters), gradient));
    result.steps = step + 1;
    if (observer && !observer(step, result.last_step, result.parameters)) break;
  }
  ASSIGN_OR_RETURN(result.final_eval, computer->Evaluate(result.parameters, data.AllRows(), {}));
  return result;
}

}  // namespace ringside::worker
