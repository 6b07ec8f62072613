#include "common/flags/training_flags.h"

#include <string>
#include <type_traits>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "common/optimizer.h"

namespace {

// One default per setting: the struct's.
const ringside::TrainingOptions kDefaults;

// The help of the description's row `name` (every flag below has one).
const char* Help(const char* name) { return ringside::FindTrainingOption(name)->help; }

}  // namespace

// One flag per row of the description (common/training_options.h), of the row's value type.
ABSL_FLAG(std::string, model, kDefaults.model, Help("model"));
ABSL_FLAG(std::string, activation, kDefaults.activation, Help("activation"));
ABSL_FLAG(std::string, data, kDefaults.data, Help("data"));
ABSL_FLAG(int64_t, steps, kDefaults.steps, Help("steps"));
ABSL_FLAG(int64_t, eval_every, kDefaults.eval_every, Help("eval_every"));
ABSL_FLAG(int64_t, batch_size, kDefaults.batch_size, Help("batch_size"));
ABSL_FLAG(float, lr, kDefaults.optimizer.learning_rate, Help("lr"));
ABSL_FLAG(std::string, optimizer, std::string(ringside::OptimizerName(kDefaults.optimizer.kind)),
          Help("optimizer"));
ABSL_FLAG(uint64_t, seed, kDefaults.seed, Help("seed"));
ABSL_FLAG(std::string, staleness, ringside::StalenessText(kDefaults.staleness), Help("staleness"));
ABSL_FLAG(int64_t, backup_workers, kDefaults.backup_workers, Help("backup_workers"));
ABSL_FLAG(std::string, straggler, ringside::StragglerText(kDefaults.straggler), Help("straggler"));
ABSL_FLAG(std::string, wire_dtype, std::string(ringside::WireDtypeName(kDefaults.wire_dtype)),
          Help("wire_dtype"));
ABSL_FLAG(uint64_t, bucket_bytes, kDefaults.bucket_bytes, Help("bucket_bytes"));
ABSL_FLAG(std::string, compression, ringside::CompressionText(kDefaults.compression),
          Help("compression"));
ABSL_FLAG(int64_t, compression_warmup, kDefaults.compression_warmup, Help("compression_warmup"));
ABSL_FLAG(std::string, device, kDefaults.device, Help("device"));

namespace ringside {
namespace {

// The value of `flag` as the type `like` holds; nullopt when the flag is of another type.
std::optional<TrainingOptionValue> FlagValue(const absl::CommandLineFlag& flag,
                                             const TrainingOptionValue& like) {
  return std::visit(
      [&flag](const auto& typed) -> std::optional<TrainingOptionValue> {
        using T = std::decay_t<decltype(typed)>;
        if (absl::optional<T> value = flag.TryGet<T>()) return TrainingOptionValue(*value);
        return std::nullopt;
      },
      like);
}

}  // namespace

absl::StatusOr<TrainingOptions> TrainingOptionsFromFlags() {
  TrainingOptions options;
  for (const TrainingOption& option : TrainingOptionTable()) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(option.name);
    std::optional<TrainingOptionValue> value;
    if (flag != nullptr) value = FlagValue(*flag, option.get(options));
    if (!value.has_value()) {
      return absl::InternalError(
          absl::StrCat("--", option.name, " is not defined as a flag of the setting's type"));
    }
    if (absl::Status status = option.set(*value, options); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", option.name, "=", TrainingOptionText(*value), ": ", status.message()));
    }
  }
  return options;
}

}  // namespace ringside
