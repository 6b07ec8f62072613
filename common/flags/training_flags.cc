#include "common/flags/training_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/optimizer.h"

namespace {
const ringside::TrainingOptions kTraining;
}  // namespace

ABSL_FLAG(std::string, model, kTraining.model,
          "MLP layer sizes, Spark ML style (inputs,...,classes)");
ABSL_FLAG(std::string, activation, kTraining.activation,
          "hidden activation: sigmoid, tanh, relu, leaky_relu, elu, swish, softplus");
ABSL_FLAG(std::string, data, kTraining.data,
          "iris, synthetic:ROWS, fashion-mnist (Debian's dataset-fashion-mnist) or "
          "fashion-mnist:DIR (a directory with its four IDX files)");
ABSL_FLAG(int64_t, steps, kTraining.steps, "training steps");
ABSL_FLAG(int64_t, eval_every, kTraining.eval_every,
          "evaluate test accuracy on the data's held-out test set (fashion-mnist) every this many "
          "steps, off the training path");
ABSL_FLAG(int64_t, batch_size, kTraining.batch_size, "global batch size (split across workers)");
ABSL_FLAG(double, lr, 0.01, "learning rate");
ABSL_FLAG(std::string, optimizer, "adam", "sgd, momentum or adam");
ABSL_FLAG(uint64_t, seed, kTraining.seed, "seed of parameters, synthetic data and batch order");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda[:i]");

namespace ringside {

absl::StatusOr<TrainingOptions> TrainingOptionsFromFlags() {
  TrainingOptions training;
  training.model = absl::GetFlag(FLAGS_model);
  training.activation = absl::GetFlag(FLAGS_activation);
  training.data = absl::GetFlag(FLAGS_data);
  training.steps = absl::GetFlag(FLAGS_steps);
  training.eval_every = absl::GetFlag(FLAGS_eval_every);
  if (training.eval_every <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_every=", training.eval_every, ": must be at least 1 step"));
  }
  training.batch_size = absl::GetFlag(FLAGS_batch_size);
  training.seed = absl::GetFlag(FLAGS_seed);
  training.device = absl::GetFlag(FLAGS_device);
  absl::StatusOr<OptimizerKind> optimizer = ParseOptimizer(absl::GetFlag(FLAGS_optimizer));
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--optimizer: ", optimizer.status().message()));
  }
  training.optimizer.kind = *optimizer;
  training.optimizer.learning_rate = static_cast<float>(absl::GetFlag(FLAGS_lr));
  if (absl::Status status = ValidateOptimizerConfig(training.optimizer); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--lr: ", status.message()));
  }
  return training;
}

}  // namespace ringside
