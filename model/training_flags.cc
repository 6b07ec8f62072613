#include "model/training_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/optimizer.h"

namespace {
const ringside::worker::TrainingOptions kTraining;
}  // namespace

ABSL_FLAG(std::string, model, kTraining.model,
          "MLP layer sizes, Spark ML style (inputs,...,classes)");
ABSL_FLAG(std::string, activation, kTraining.activation,
          "hidden activation: sigmoid, tanh, relu, leaky_relu, elu, swish, softplus");
ABSL_FLAG(std::string, data, kTraining.data, "iris or synthetic:ROWS");
ABSL_FLAG(int64_t, steps, kTraining.steps, "training steps");
ABSL_FLAG(int64_t, batch_size, kTraining.batch_size, "global batch size (split across workers)");
ABSL_FLAG(double, lr, 0.01, "learning rate");
ABSL_FLAG(std::string, optimizer, "adam", "sgd, momentum or adam");
ABSL_FLAG(uint64_t, seed, kTraining.seed, "seed of parameters, synthetic data and batch order");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda[:i]");

namespace ringside::worker {

absl::StatusOr<TrainingOptions> TrainingOptionsFromFlags() {
  TrainingOptions training;
  training.model = absl::GetFlag(FLAGS_model);
  training.activation = absl::GetFlag(FLAGS_activation);
  training.data = absl::GetFlag(FLAGS_data);
  training.steps = absl::GetFlag(FLAGS_steps);
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

}  // namespace ringside::worker
