// First-order optimisers (SGD, momentum, Adam) over a contiguous range of a flat parameter
// buffer. A parameter-server shard owns an Optimizer for its sub-range, a ring worker one for the
// whole buffer; every update is element-wise and the step counter is per optimiser, so applying
// one optimiser to [0, K) gives bit-identical parameters to applying one optimiser per piece of
// any split of [0, K) (tests/common/optimizer_test.cc checks it).
//
// Determinism: the update uses only IEEE +, -, *, / and sqrt in float (Adam's bias corrections
// are running products in double), so results do not depend on the libm or the platform.
//
// Ownership: an Optimizer owns its state (momentum / Adam moments); parameters and gradients are
// caller-owned spans. Thread-compatible: one thread steps an Optimizer at a time.
// Errors: bad configurations and size mismatches return INVALID_ARGUMENT; nothing aborts.
#ifndef RINGSIDE_COMMON_OPTIMIZER_H_
#define RINGSIDE_COMMON_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ringside {

enum class OptimizerKind { kSgd, kMomentum, kAdam };

// "sgd" | "momentum" | "adam" (case-sensitive, as typed in --optimizer); else INVALID_ARGUMENT.
absl::StatusOr<OptimizerKind> ParseOptimizer(absl::string_view name);
absl::string_view OptimizerName(OptimizerKind kind);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;  // > 0 and finite
  float momentum = 0.9f;        // kMomentum: v = momentum * v + g; p -= lr * v. In [0, 1).
  float beta1 = 0.9f;           // kAdam: first-moment decay, in [0, 1)
  float beta2 = 0.999f;         // kAdam: second-moment decay, in [0, 1)
  float epsilon = 1e-8f;        // kAdam: denominator guard, > 0
  friend bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
    return a.kind == b.kind && a.learning_rate == b.learning_rate && a.momentum == b.momentum &&
           a.beta1 == b.beta1 && a.beta2 == b.beta2 && a.epsilon == b.epsilon;
  }
  friend bool operator!=(const OptimizerConfig& a, const OptimizerConfig& b) { return !(a == b); }
};

// OK, or INVALID_ARGUMENT naming the first out-of-range field.
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

// Optimiser state for `size` consecutive parameters.
class Optimizer {
 public:
  // INVALID_ARGUMENT for a bad config.
  static absl::StatusOr<Optimizer> Create(const OptimizerConfig& config, size_t size);
  // state_size() of an optimiser of that kind and size, without making one.
  static size_t StateSize(OptimizerKind kind, size_t size);

  // One update: params[i] moves against grads[i]. Both spans must have size() elements, else
  // INVALID_ARGUMENT and nothing changes.
  //   sgd:      p -= lr * g
  //   momentum: v = mu * v + g;  p -= lr * v
  //   adam:     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
  //             p -= lr_t * m / (sqrt(v) + eps_t), lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t),
  //             eps_t = eps * sqrt(1 - b2^t)  (Kingma & Ba's update with eps on the unbiased v)
  absl::Status Step(absl::Span<float> params, absl::Span<const float> grads);

  // The same update in pieces, as a parameter-server shard applies a step segment by segment
  // while the segments arrive: BeginStep() once (it counts the step), then StepPiece for pieces
  // of [0, size()) in any order, every element once. Bit-identical to Step() on the whole range
  // (every update is elementwise and the step's scalars depend only on the step count).
  // StepPiece: INVALID_ARGUMENT, nothing changed, unless both spans have the same size and
  // [begin, begin + size) lies within [0, size()). A step begun and not covered leaves the
  // optimiser half-updated: its owner discards it.
  void BeginStep();
  absl::Status StepPiece(size_t begin, absl::Span<float> params, absl::Span<const float> grads);

  // The whole optimiser state as floats, [steps, first moments..., second moments...] (what
  // the kind keeps), so it can travel with the parameters (an elastic job re-syncs both when its
  // membership changes). ImportState takes what ExportState of the same config and size gave;
  // else INVALID_ARGUMENT and nothing changes. Steps travel exactly up to 2^24.
  std::vector<float> ExportState() const;
  // The same into `state`, which must have state_size() floats (else INVALID_ARGUMENT): a
  // regroup writes it straight into the buffer it broadcasts.
  absl::Status ExportStateTo(absl::Span<float> state) const;
  absl::Status ImportState(absl::Span<const float> state);
  // A piece of that layout, [offset, offset + piece.size()), read or written in place: a
  // regroup broadcasts the state and worker-0 streams it to the shards a segment at a time,
  // with no copy of the whole. INVALID_ARGUMENT, nothing changed, past state_size() or (import)
  // when the piece holds a step count (offset 0) that is not one. A state imported in pieces is
  // the exported one once every element was written.
  absl::Status ExportStatePiece(size_t offset, absl::Span<float> piece) const;
  absl::Status ImportStatePiece(size_t offset, absl::Span<const float> piece);
  // A piece of the state of the parameters [begin, end) alone, in OptimizerStateRange's layout
  // (below), read in place: what worker-0 streams to the shard owning that range.
  // INVALID_ARGUMENT past that state or for a range outside [0, size()).
  absl::Status ExportRangeStatePiece(size_t begin, size_t end, size_t offset,
                                     absl::Span<float> piece) const;
  size_t state_size() const { return StateSize(config_.kind, size_); }

  size_t size() const { return size_; }
  int64_t steps() const { return steps_; }
  const OptimizerConfig& config() const { return config_; }

 private:
  Optimizer(const OptimizerConfig& config, size_t size);
  // INVALID_ARGUMENT unless [offset, offset + count) lies within the state.
  absl::Status CheckPiece(size_t offset, size_t count) const;

  OptimizerConfig config_;
  size_t size_ = 0;
  int64_t steps_ = 0;
  std::vector<float> first_;   // momentum velocity or Adam m; empty for SGD
  std::vector<float> second_;  // Adam v; empty otherwise
  double beta1_power_ = 1.0;   // beta1^steps_, a running product (no pow: bit-reproducible)
  double beta2_power_ = 1.0;
};

// The state of an optimiser over [begin, end) of a buffer whose whole optimiser has `size`
// parameters and state `whole` (ExportState() layout): what a shard owning that range keeps,
// in the same layout, so Optimizer::ImportState of a range-sized optimiser takes it.
std::vector<float> OptimizerStateRange(absl::Span<const float> whole, size_t size, size_t begin,
                                       size_t end);
// The inverse: writes `range` (that layout, for [begin, end)) into `whole` (ExportState layout of
// `size` parameters), the step count included. INVALID_ARGUMENT when the sizes do not fit.
absl::Status PlaceOptimizerStateRange(absl::Span<const float> range, size_t size, size_t begin,
                                      size_t end, absl::Span<float> whole);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_OPTIMIZER_H_
