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
#include "worker/training_result.h"

namespace ringside::worker {

absl::StatusOr<TrainingResult> TrainLocally(const TrainingOptions& options,
                                            const StepObserver& observer = nullptr);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_LOCAL_TRAINING_H_
