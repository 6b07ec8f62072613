// Single-process training: the reference loop that the distributed modes must reproduce, the
// project's default hyper-parameters, and a helper the Iris test and the benches use.
// One step: global batch t (BatchSchedule), gradient on `device`, optimiser update of the whole
// flat buffer. Pure apart from the computer it creates; thread-compatible.
// Errors: INVALID_ARGUMENT for bad options (parsers' messages), device errors as MakeGradient-
// Computer reports them.
#ifndef RINGSIDE_WORKER_LOCAL_TRAINING_H_
#define RINGSIDE_WORKER_LOCAL_TRAINING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/optimizer.h"
#include "common/training_options.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

struct TrainingResult {
  std::vector<float> parameters;  // after the last step
  GradientStats last_step;        // stats of the last step's batch
  Evaluation final_eval;          // full data set with the final parameters
  int64_t steps = 0;              // steps run (fewer than options.steps if stopped early)
};

// Called after every step with the step index (0-based), its stats and the updated parameters;
// return false to stop early.
using StepObserver =
    std::function<bool(int64_t step, const GradientStats& stats, absl::Span<const float> params)>;

absl::StatusOr<TrainingResult> TrainLocally(const TrainingOptions& options,
                                            const StepObserver& observer = nullptr);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_LOCAL_TRAINING_H_
