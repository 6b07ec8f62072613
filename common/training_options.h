// The job every Ringside command trains: model, data, steps, batch, optimiser, seed and device,
// with the defaults used unless a flag says otherwise. A plain struct shared by the controller
// (which hands it out as proto::JobSpec), the shards (which need the model's size and the
// optimiser) and the trainer, so none of them needs the others' code.
//
// Beside it, its one description: a table with one row per setting (its flag's name, which is
// also its proto::JobSpec field's, its help, and how to read and write it as a value). The flags
// (common/flags/training_flags.cc, through Abseil's flag reflection), a child process's command
// line (TrainingOptionsArgv) and the job spec (server/controller/job_spec.cc, through protobuf
// reflection) are all produced from the table, so no one copies the struct field by field.
// A new setting is a struct field and a row; tests/common/training_options_test.cc fails until
// both exist. Pure; thread-safe (the table is immutable).
#ifndef RINGSIDE_COMMON_TRAINING_OPTIONS_H_
#define RINGSIDE_COMMON_TRAINING_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/compression.h"
#include "common/optimizer.h"
#include "common/wire_dtype.h"

namespace ringside {

// --staleness=async: a worker never waits for the others (TrainingOptions::staleness).
inline constexpr int64_t kAsyncStaleness = -1;

// --bucket_bytes: the largest value accepted (1 GiB).
inline constexpr uint64_t kMaxBucketBytes = uint64_t{1} << 30;

// --straggler=worker-N:F: the worker of rank N computes F times slower (benchmarks only: it
// sleeps (F - 1) times each step's compute time after computing). worker < 0: none.
struct Straggler {
  int worker = -1;
  float factor = 1;
  friend bool operator==(const Straggler& a, const Straggler& b) {
    return a.worker == b.worker && a.factor == b.factor;
  }
  friend bool operator!=(const Straggler& a, const Straggler& b) { return !(a == b); }
};

// The most steps a job may ask for: far beyond any run (a trillion), low enough that step counts
// and what grows with them never overflow. `ringside up` trains this many, "until stopped".
inline constexpr int64_t kUntilStoppedSteps = 1'000'000'000'000;
// The largest global batch (the gradient computers' bound on a batch's rows).
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 24;

// The defaults every Ringside command uses unless a flag says otherwise (the flags take theirs
// from here: one default per setting).
struct TrainingOptions {
  std::string model = "4,16,3";  // --model
  std::string activation = "tanh";
  std::string data = "iris";  // --data
  int64_t steps = 200;        // --steps
  // --eval_every: rank 0 evaluates the parameters on the data's held-out test set after every
  // this many steps (and after the last), off the step's critical path
  // (worker/accuracy_evaluator.h); data without a test set (Iris, synthetic) is not evaluated.
  int64_t eval_every = 25;
  int64_t batch_size = 32;  // --batch_size (global: split across workers)
  OptimizerConfig optimizer = {OptimizerKind::kAdam, /*learning_rate=*/0.01f};
  uint64_t seed = 1;  // --seed: parameters, synthetic data, batch order
  // --staleness (parameter-server mode only; docs/architecture.md): 0, today's synchronous steps;
  // k >= 1, a worker at step c may start it while the slowest worker has completed step c - k;
  // kAsyncStaleness, never waits. Written "0", "k" or "async".
  int64_t staleness = 0;
  // --backup_workers=b (ps mode, staleness 0 only): a shard applies a step once N - b workers'
  // pushes are in; later pushes of that step are dropped (counted), never applied.
  int64_t backup_workers = 0;
  Straggler straggler;  // --straggler
  // --wire_dtype: the element type gradients travel in, in both modes (sums stay float32;
  // docs/architecture.md, "Gradients on the wire"). The job's, so every member agrees.
  WireDtype wire_dtype = WireDtype::kFp32;
  // --bucket_bytes: 0, the gradient is synchronised once the backward pass is over; else in
  // buckets of whole layers, last layer first, each synchronised as soon as the backward pass has
  // produced it while earlier layers are still computed (worker/gradient_buckets.h: the first
  // bucket at most kFirstBucketBytes, the others about this many bytes of float32 gradient).
  // Ring and synchronous ps mode; refused with --staleness or --backup_workers.
  uint64_t bucket_bytes = 0;
  // --compression: none, or the codec gradients travel through (common/compression.h: topk:F and
  // sign in ps mode, randomk:F in the ring), with error feedback; synchronous steps only, float32
  // values (refused with --staleness, --backup_workers or a 16-bit --wire_dtype). The job's.
  Compression compression;
  // --compression_warmup: the first this many steps travel uncompressed (DeepSpeed's
  // freeze_step); 0, compressed from the first.
  int64_t compression_warmup = 0;
  // --device: auto (CUDA when a device is present, else CPU), cpu or cuda[:i]; each member's own.
  std::string device = "auto";
};

// Whose a setting is: the job's (the controller hands it to every member in proto::JobSpec, in
// the field of the setting's name) or each member's own (the device: never in the job spec).
enum class TrainingOptionScope { kJob, kMember };

// A setting's value as its flag and its JobSpec field carry it: the optimiser by name, the
// learning rate as the struct's float (the JobSpec field is a double holding it exactly).
using TrainingOptionValue = std::variant<std::string, int64_t, uint64_t, float>;

// One row of the description.
struct TrainingOption {
  const char* name;  // --name; for kJob also the proto::JobSpec field's name
  TrainingOptionScope scope;
  const char* help;  // the flag's help
  TrainingOptionValue (*get)(const TrainingOptions& options);
  // Stores `value` (of the type get() returns) into `options`. INVALID_ARGUMENT with a bare
  // message (the caller names where the value came from) when it is out of range or of another
  // type.
  absl::Status (*set)(const TrainingOptionValue& value, TrainingOptions& options);
  // In a JobSpec, 0 stands for "not set" (from a controller that predates the field): the
  // default stays.
  bool zero_means_unset = false;
};

// Every setting, in the order command lines list them.
absl::Span<const TrainingOption> TrainingOptionTable();

// The row named `name` (without "--"), or null.
const TrainingOption* FindTrainingOption(absl::string_view name);

// `value` as a flag's text: a string as it is, an integer in decimal, a float in the fewest
// significant digits (at most 9) that read back to the same float.
std::string TrainingOptionText(const TrainingOptionValue& value);

// "--name=text" for every setting of `options`, in table order; only those of `scope` when
// given (a controller's command line takes the job's, a worker's its own).
// "async", or the staleness in decimal; and back (INVALID_ARGUMENT for anything but "async" or an
// integer in [0, 1000000]).
std::string StalenessText(int64_t staleness);
absl::StatusOr<int64_t> ParseStaleness(absl::string_view text);
// "" (none) or "worker-N:F"; and back (INVALID_ARGUMENT unless N >= 0 and 1 <= F <= 1000).
std::string StragglerText(const Straggler& straggler);
absl::StatusOr<Straggler> ParseStraggler(absl::string_view text);

// Whether the shards hold the job's authoritative state, workers pushing gradients and pulling
// parameters (server/ps/push_pull_shard.h): bounded staleness, async, and backup workers.
constexpr bool ShardsHoldTheState(int64_t staleness, int64_t backup_workers) {
  return staleness != 0 || backup_workers > 0;
}

// The settings that only make sense together: backup workers need staleness 0; a 16-bit wire,
// buckets and compression need staleness 0 and no backup workers (not built for the modes in
// which the shards hold the state); compression carries float32 values, so no 16-bit wire. (That
// the compression fits the mode is checked where the mode is known: CheckCompressionFitsMode, by
// the controller at start and at each mode switch, and by each member's sync. That b is below
// the generation's worker count is checked where the count is known: the shard.)
absl::Status CheckSyncSettings(const TrainingOptions& options);

std::vector<std::string> TrainingOptionsArgv(
    const TrainingOptions& options, std::optional<TrainingOptionScope> scope = std::nullopt);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_TRAINING_OPTIONS_H_
