// The job every Ringside command trains: model, data, steps, batch, optimiser, seed and device,
// with the defaults used unless a flag says otherwise. A plain struct shared by the controller
// (which hands it out as proto::JobSpec), the shards (which need the model's size and the
// optimiser) and the trainer, so none of them needs the others' code.
#ifndef RINGSIDE_COMMON_TRAINING_OPTIONS_H_
#define RINGSIDE_COMMON_TRAINING_OPTIONS_H_

#include <cstdint>
#include <string>

#include "common/optimizer.h"

namespace ringside {

// The defaults every Ringside command uses unless a flag says otherwise.
struct TrainingOptions {
  std::string model = "4,16,3";  // --model
  std::string activation = "tanh";
  std::string data = "iris";  // --data
  int64_t steps = 200;        // --steps
  // --eval_every: rank 0 evaluates the parameters on the data's held-out test set after every
  // this many steps (and after the last), off the step's critical path (worker/test_evaluator.h);
  // data without a test set (Iris, synthetic) is not evaluated.
  int64_t eval_every = 25;
  int64_t batch_size = 32;  // --batch_size (global: split across workers)
  OptimizerConfig optimizer = {OptimizerKind::kAdam, /*learning_rate=*/0.01f};
  uint64_t seed = 1;           // --seed: parameters, synthetic data, batch order
  std::string device = "cpu";  // --device
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_TRAINING_OPTIONS_H_
