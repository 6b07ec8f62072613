#include "common/training_options.h"

#include <iterator>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace ringside {
namespace {

using Scope = TrainingOptionScope;
using Value = TrainingOptionValue;

// The alternatives of TrainingOptionValue, in order, as an error names them.
constexpr const char* kTypeNames[] = {"text", "a signed integer", "an unsigned integer",
                                      "a number"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Value>);

template <typename T>
absl::StatusOr<T> ValueAs(const Value& value) {
  if (const T* typed = std::get_if<T>(&value)) return *typed;
  return absl::InvalidArgumentError(
      absl::StrCat("want ", kTypeNames[Value(T()).index()], ", not ", kTypeNames[value.index()]));
}

// A setting with no range of its own: any value of its type is stored.
template <typename T>
absl::Status Store(const Value& value, T& field) {
  ASSIGN_OR_RETURN(field, ValueAs<T>(value));
  return absl::OkStatus();
}

absl::Status SetEvalEvery(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const int64_t every, ValueAs<int64_t>(value));
  if (every < 1) return absl::InvalidArgumentError("must be at least 1 step");
  options.eval_every = every;
  return absl::OkStatus();
}

// A count that must lie in [min, max] `unit`s.
absl::Status StoreCount(const Value& value, int64_t min, int64_t max, const char* unit,
                        int64_t& field) {
  ASSIGN_OR_RETURN(const int64_t count, ValueAs<int64_t>(value));
  if (count < min || count > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be ", min, " to ", max, " ", unit, ", not ", count));
  }
  field = count;
  return absl::OkStatus();
}

absl::Status SetLearningRate(const Value& value, TrainingOptions& options) {
  OptimizerConfig config = options.optimizer;
  ASSIGN_OR_RETURN(config.learning_rate, ValueAs<float>(value));
  RETURN_IF_ERROR(ValidateOptimizerConfig(config));
  options.optimizer = config;
  return absl::OkStatus();
}

absl::Status SetOptimizer(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const std::string name, ValueAs<std::string>(value));
  ASSIGN_OR_RETURN(options.optimizer.kind, ParseOptimizer(name));
  return absl::OkStatus();
}

absl::Status SetStaleness(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const std::string text, ValueAs<std::string>(value));
  ASSIGN_OR_RETURN(options.staleness, ParseStaleness(text));
  return absl::OkStatus();
}

absl::Status SetBackupWorkers(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const int64_t backup, ValueAs<int64_t>(value));
  // The bound is the largest worker count a shard accepts (shard_load.cc).
  if (backup < 0 || backup >= 65536) {
    return absl::InvalidArgumentError("must be 0 or more, below the worker count");
  }
  options.backup_workers = backup;
  return absl::OkStatus();
}

absl::Status SetStraggler(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const std::string text, ValueAs<std::string>(value));
  ASSIGN_OR_RETURN(options.straggler, ParseStraggler(text));
  return absl::OkStatus();
}

absl::Status SetWireDtype(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const std::string name, ValueAs<std::string>(value));
  ASSIGN_OR_RETURN(options.wire_dtype, ParseWireDtype(name));
  return absl::OkStatus();
}

absl::Status SetBucketBytes(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const uint64_t bytes, ValueAs<uint64_t>(value));
  if (bytes > kMaxBucketBytes) {
    return absl::InvalidArgumentError("must be 0 (off) or at most 1073741824 bytes");
  }
  options.bucket_bytes = bytes;
  return absl::OkStatus();
}

absl::Status SetCompression(const Value& value, TrainingOptions& options) {
  ASSIGN_OR_RETURN(const std::string text, ValueAs<std::string>(value));
  ASSIGN_OR_RETURN(options.compression, ParseCompression(text));
  return absl::OkStatus();
}

// The rows. Help texts are what the flags' --help has always said.
constexpr TrainingOption kTable[] = {
    {"model", Scope::kJob, "MLP layer sizes, Spark ML style (inputs,...,classes)",
     [](const TrainingOptions& o) -> Value { return o.model; },
     [](const Value& v, TrainingOptions& o) { return Store(v, o.model); }},
    {"activation", Scope::kJob,
     "hidden activation: sigmoid, tanh, relu, leaky_relu, elu, swish, softplus",
     [](const TrainingOptions& o) -> Value { return o.activation; },
     [](const Value& v, TrainingOptions& o) { return Store(v, o.activation); }},
    {"data", Scope::kJob,
     "iris, synthetic:ROWS, fashion-mnist (Debian's dataset-fashion-mnist) or "
     "fashion-mnist:DIR (a directory with its four IDX files)",
     [](const TrainingOptions& o) -> Value { return o.data; },
     [](const Value& v, TrainingOptions& o) { return Store(v, o.data); }},
    {"steps", Scope::kJob, "training steps",
     [](const TrainingOptions& o) -> Value { return o.steps; },
     [](const Value& v, TrainingOptions& o) {
       return StoreCount(v, 1, kUntilStoppedSteps, "steps", o.steps);
     }},
    {"eval_every", Scope::kJob,
     "evaluate test accuracy on the data's held-out test set (fashion-mnist) every this many "
     "steps, off the training path",
     [](const TrainingOptions& o) -> Value { return o.eval_every; }, &SetEvalEvery,
     /*zero_means_unset=*/true},
    {"batch_size", Scope::kJob, "global batch size (split across workers)",
     [](const TrainingOptions& o) -> Value { return o.batch_size; },
     [](const Value& v, TrainingOptions& o) {
       return StoreCount(v, 1, kMaxGlobalBatch, "rows", o.batch_size);
     }},
    {"lr", Scope::kJob, "learning rate",
     [](const TrainingOptions& o) -> Value { return o.optimizer.learning_rate; }, &SetLearningRate},
    {"optimizer", Scope::kJob, "sgd, momentum or adam",
     [](const TrainingOptions& o) -> Value { return std::string(OptimizerName(o.optimizer.kind)); },
     &SetOptimizer},
    {"seed", Scope::kJob, "seed of parameters, synthetic data and batch order",
     [](const TrainingOptions& o) -> Value { return o.seed; },
     [](const Value& v, TrainingOptions& o) { return Store(v, o.seed); }},
    {"staleness", Scope::kJob,
     "ps mode: 0 (synchronous steps), k (a worker may run up to k steps ahead of the slowest) "
     "or async (never waits); shards apply each worker's gradient as it arrives unless 0",
     [](const TrainingOptions& o) -> Value { return StalenessText(o.staleness); }, &SetStaleness,
     /*zero_means_unset=*/true},
    {"backup_workers", Scope::kJob,
     "ps mode with --staleness=0: a step is applied once all but this many workers pushed it; "
     "later pushes of the step are dropped",
     [](const TrainingOptions& o) -> Value { return o.backup_workers; }, &SetBackupWorkers,
     /*zero_means_unset=*/true},
    {"straggler", Scope::kJob,
     "worker-N:F makes the worker of rank N compute F times slower (benchmarks); empty: none",
     [](const TrainingOptions& o) -> Value { return StragglerText(o.straggler); }, &SetStraggler,
     /*zero_means_unset=*/true},
    {"wire_dtype", Scope::kJob,
     "element type of gradients on the wire, both modes: fp32, fp16 or bf16 (sums in fp32)",
     [](const TrainingOptions& o) -> Value { return std::string(WireDtypeName(o.wire_dtype)); },
     &SetWireDtype, /*zero_means_unset=*/true},
    {"bucket_bytes", Scope::kJob,
     "sync the gradient in buckets of whole layers of about this many bytes, last layer first, "
     "overlapped with the backward pass (ring and ps mode, --staleness=0); 0: one sync after it",
     [](const TrainingOptions& o) -> Value { return o.bucket_bytes; }, &SetBucketBytes,
     /*zero_means_unset=*/true},
    {"compression", Scope::kJob,
     "gradient compression with error feedback: none, topk:F or sign (ps mode), randomk:F or "
     "powersgd:R (ring mode); F the fraction of each segment's elements sent, R the rank of each "
     "weight matrix's factors; --staleness=0 only. topk and sign train best under "
     "--optimizer=sgd (under adam they trail fp32: docs/benchmarks.md)",
     [](const TrainingOptions& o) -> Value { return CompressionText(o.compression); },
     &SetCompression, /*zero_means_unset=*/true},
    {"compression_warmup", Scope::kJob,
     "with --compression: the first this many steps travel uncompressed",
     [](const TrainingOptions& o) -> Value { return o.compression_warmup; },
     [](const Value& v, TrainingOptions& o) {
       return StoreCount(v, 0, kUntilStoppedSteps, "steps", o.compression_warmup);
     },
     /*zero_means_unset=*/true},
    {"device", Scope::kMember, "auto, cpu or cuda[:i]",
     [](const TrainingOptions& o) -> Value { return o.device; },
     [](const Value& v, TrainingOptions& o) { return Store(v, o.device); }},
};

std::string FloatText(float value) {
  for (int digits = 6; digits < 9; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, value);
    float back = 0;
    if (absl::SimpleAtof(text, &back) && back == value) return text;
  }
  return absl::StrFormat("%.9g", value);  // always reads back (or is nan/inf)
}

}  // namespace

absl::Span<const TrainingOption> TrainingOptionTable() { return kTable; }

const TrainingOption* FindTrainingOption(absl::string_view name) {
  for (const TrainingOption& option : kTable) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

std::string TrainingOptionText(const TrainingOptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, float>) {
          return FloatText(v);
        } else {
          return absl::StrCat(v);
        }
      },
      value);
}

std::string StalenessText(int64_t staleness) {
  return staleness == kAsyncStaleness ? "async" : absl::StrCat(staleness);
}

absl::StatusOr<int64_t> ParseStaleness(absl::string_view text) {
  if (text == "async") return kAsyncStaleness;
  int64_t staleness = 0;
  if (!absl::SimpleAtoi(text, &staleness) || staleness < 0 || staleness > 1000000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "staleness \"", text.substr(0, 32), "\" is not 0, a step count up to 1000000 or async"));
  }
  return staleness;
}

std::string StragglerText(const Straggler& straggler) {
  if (straggler.worker < 0) return "";
  return absl::StrCat("worker-", straggler.worker, ":", FloatText(straggler.factor));
}

absl::StatusOr<Straggler> ParseStraggler(absl::string_view text) {
  if (text.empty()) return Straggler{};
  const auto bad = [text] {
    return absl::InvalidArgumentError(absl::StrCat(
        "straggler \"", text.substr(0, 32), "\" is not worker-N:F (rank N, factor 1 to 1000)"));
  };
  constexpr absl::string_view kPrefix = "worker-";
  const size_t colon = text.find(':');
  if (!absl::StartsWith(text, kPrefix) || colon == absl::string_view::npos) return bad();
  Straggler straggler;
  float factor = 0;
  if (!absl::SimpleAtoi(text.substr(kPrefix.size(), colon - kPrefix.size()), &straggler.worker) ||
      straggler.worker < 0 || !absl::SimpleAtof(text.substr(colon + 1), &factor) ||
      !(factor >= 1 && factor <= 1000)) {
    return bad();
  }
  straggler.factor = factor;
  return straggler;
}

absl::Status CheckSyncSettings(const TrainingOptions& options) {
  if (options.backup_workers > 0 && options.staleness != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--backup_workers=", options.backup_workers,
                                                   " needs --staleness=0, not ",
                                                   StalenessText(options.staleness)));
  }
  if (ShardsHoldTheState(options.staleness, options.backup_workers) &&
      options.wire_dtype != WireDtype::kFp32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--wire_dtype=", WireDtypeName(options.wire_dtype), " needs --staleness=0 and ",
        "--backup_workers=0, not ", StalenessText(options.staleness), " and ",
        options.backup_workers,
        ": with the shards holding the state, workers push and pull float32 (16-bit pushes are "
        "not built for it)"));
  }
  if (options.bucket_bytes > 0 && (options.staleness != 0 || options.backup_workers > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bucket_bytes=", options.bucket_bytes,
                     " needs --staleness=0 and --backup_workers=0, not ",
                     StalenessText(options.staleness), " and ", options.backup_workers,
                     ": overlapping the sync with the backward pass is not built for them"));
  }
  if (options.compression.kind != CompressionKind::kNone) {
    const std::string flag = "--compression=" + CompressionText(options.compression);
    if (ShardsHoldTheState(options.staleness, options.backup_workers)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " needs --staleness=0 and --backup_workers=0, not ",
                       StalenessText(options.staleness), " and ", options.backup_workers,
                       ": a compressed push with the shards holding the state is not built"));
    }
    if (options.wire_dtype != WireDtype::kFp32) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " carries float32 values: it takes --wire_dtype=fp32, not ",
                       WireDtypeName(options.wire_dtype)));
    }
    if (options.bucket_bytes > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " needs --bucket_bytes=0, not ", options.bucket_bytes,
                       ": a compressed step is not overlapped with the backward pass"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> TrainingOptionsArgv(const TrainingOptions& options,
                                             std::optional<TrainingOptionScope> scope) {
  std::vector<std::string> argv;
  for (const TrainingOption& option : kTable) {
    if (scope.has_value() && option.scope != *scope) continue;
    argv.push_back(absl::StrCat("--", option.name, "=", TrainingOptionText(option.get(options))));
  }
  return argv;
}

}  // namespace ringside
