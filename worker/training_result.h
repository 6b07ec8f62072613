// What a training run returns (TrainLocally in worker/local_training.h, TrainDataParallel in
// worker/data_parallel.h) and what it calls after every step. Plain values; thread-compatible.
#ifndef RINGSIDE_WORKER_TRAINING_RESULT_H_
#define RINGSIDE_WORKER_TRAINING_RESULT_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/types/span.h"
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

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_TRAINING_RESULT_H_
