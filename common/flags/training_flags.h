// The job flags every daemon that takes part in training shares (--model, --activation, --data,
// --steps, --eval_every, --batch_size, --lr, --optimizer, --seed, --wire_dtype, --device), defined
// once so the worker, the parameter-server shard, the controller and `ringside` cannot disagree
// on names or defaults. Their names, help and defaults come from TrainingOptions and its
// description (common/training_options.h); they are read back through Abseil's flag reflection, row
// by row.
#ifndef RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_
#define RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_

#include "absl/status/statusor.h"
#include "common/training_options.h"

namespace ringside {

// The flags' values; INVALID_ARGUMENT "--name=value: why" for a value out of range (a bad
// optimiser, learning rate or --eval_every); INTERNAL when a row of the description has no flag
// of its type (a build that did not link this file's flags).
absl::StatusOr<TrainingOptions> TrainingOptionsFromFlags();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_
