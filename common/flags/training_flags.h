// The job flags every daemon that takes part in training shares (--model, --activation, --data,
// --steps, --eval_every, --batch_size, --lr, --optimizer, --seed, --device), defined once so the
// worker and the parameter-server shard cannot disagree on names or defaults.
#ifndef RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_
#define RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_

#include "absl/status/statusor.h"
#include "common/training_options.h"

namespace ringside {

// The flags' values; INVALID_ARGUMENT naming the flag for a bad optimiser, learning rate or
// --eval_every.
absl::StatusOr<TrainingOptions> TrainingOptionsFromFlags();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_TRAINING_FLAGS_H_
