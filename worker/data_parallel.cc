#include "worker/data_parallel.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/model_spec.h"

namespace ringside::worker {

absl::StatusOr<std::unique_ptr<LocalSync>> LocalSync::Create(const OptimizerConfig& config,
                                                             size_t parameters) {
  ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::Create(config, parameters));
  return std::unique_ptr<LocalSync>(new LocalSync(std::move(optimizer)));
}

absl::StatusOr<SyncTiming> LocalSync::Step(int64_t /*step*/, absl::Span<float> gradient,
                                           absl::Span<float> params) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(optimizer_.Step(params, gradient));
  return SyncTiming{absl::ZeroDuration(), absl::Now() - start};
}

absl::StatusOr<TrainingResult> TrainDataParallel(const TrainingOptions& options, WorkerSlot slot,
                                                 ParameterSync& sync, Metrics* metrics,
                                                 const StepObserver& observer) {
  if (slot.world < 1 || slot.rank < 0 || slot.rank >= slot.world) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker rank ", slot.rank, " is not in a world of ", slot.world));
  }
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(const DataSpec data_spec, ParseDataSpec(options.data));
  ASSIGN_OR_RETURN(const Dataset data, LoadDataset(data_spec, spec, options.seed));
  ASSIGN_OR_RETURN(const BatchSchedule schedule,
                   BatchSchedule::Create(data.rows(), options.batch_size, options.seed));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer,
                   MakeGradientComputer(options.device, spec));

  const SyncMode mode = sync.mode();
  prometheus::Histogram* compute_seconds = nullptr;
  prometheus::Histogram* sync_seconds = nullptr;
  prometheus::Histogram* update_seconds = nullptr;
  if (metrics != nullptr) {
    compute_seconds = &metrics->StepSeconds(mode, StepPhase::kCompute);
    sync_seconds = &metrics->StepSeconds(mode, StepPhase::kSync);
    update_seconds = &metrics->StepSeconds(mode, StepPhase::kUpdate);
  }

  TrainingResult result;
  result.parameters = InitialParameters(spec, options.seed);
  std::vector<float> gradient(spec.parameter_count());
  OwnedBatch batch;
  GradientOptions gradient_options;
  gradient_options.normalizer_rows = schedule.global_batch();
  for (int64_t step = 0; step < options.steps; ++step) {
    const absl::Time start = absl::Now();
    GatherRows(data, schedule.WorkerBatchRows(step, slot.rank, slot.world), batch);
    ASSIGN_OR_RETURN(result.last_step,
                     computer->ComputeGradient(result.parameters, batch.view(),
                                               absl::MakeSpan(gradient), gradient_options));
    const absl::Duration compute = absl::Now() - start;
    absl::StatusOr<SyncTiming> timing =
        sync.Step(step, absl::MakeSpan(gradient), absl::MakeSpan(result.parameters));
    if (!timing.ok()) return Annotate(timing.status(), absl::StrCat("training step ", step));
    result.steps = step + 1;
    if (metrics != nullptr) {
      compute_seconds->Observe(absl::ToDoubleSeconds(compute));
      sync_seconds->Observe(absl::ToDoubleSeconds(timing->sync));
      update_seconds->Observe(absl::ToDoubleSeconds(timing->update));
      metrics->StepsTotal(mode).Increment();
      metrics->TrainingLoss(mode).Set(result.last_step.mean_loss);
    }
    if (observer && !observer(step, result.last_step, result.parameters)) break;
  }
  ASSIGN_OR_RETURN(result.final_eval, computer->Evaluate(result.parameters, data.AllRows(), {}));
  return result;
}

}  // namespace ringside::worker
