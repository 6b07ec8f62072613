#include "common/optimizer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside {

absl::StatusOr<OptimizerKind> ParseOptimizer(absl::string_view name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "momentum") return OptimizerKind::kMomentum;
  if (name == "adam") return OptimizerKind::kAdam;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", name, "' (want sgd, momentum or adam)"));
}

absl::string_view OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kMomentum:
      return "momentum";
    case OptimizerKind::kAdam:
      return "adam";
  }
  return "unknown";
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& config) {
  const auto in_unit = [](float x) { return x >= 0.0f && x < 1.0f; };
  if (!(std::isfinite(config.learning_rate) && config.learning_rate > 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate must be positive and finite, got ", config.learning_rate));
  }
  if (config.kind == OptimizerKind::kMomentum && !in_unit(config.momentum)) {
    return absl::InvalidArgumentError(
        absl::StrCat("momentum must be in [0, 1), got ", config.momentum));
  }
  if (config.kind == OptimizerKind::kAdam) {
    if (!in_unit(config.beta1) || !in_unit(config.beta2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("adam betas must be in [0, 1), got ", config.beta1, " and ", config.beta2));
    }
    if (!(std::isfinite(config.epsilon) && config.epsilon > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("adam epsilon must be positive, got ", config.epsilon));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Optimizer> Optimizer::Create(const OptimizerConfig& config, size_t size) {
  if (absl::Status status = ValidateOptimizerConfig(config); !status.ok()) return status;
  return Optimizer(config, size);
}

size_t Optimizer::StateSize(OptimizerKind kind, size_t size) {
  const size_t moments = kind == OptimizerKind::kSgd ? 0 : kind == OptimizerKind::kAdam ? 2 : 1;
  return 1 + moments * size;
}

Optimizer::Optimizer(const OptimizerConfig& config, size_t size) : config_(config), size_(size) {
  if (config.kind != OptimizerKind::kSgd) first_.assign(size, 0.0f);
  if (config.kind == OptimizerKind::kAdam) second_.assign(size, 0.0f);
}

absl::Status Optimizer::Step(absl::Span<float> params, absl::Span<const float> grads) {
  if (params.size() != size_ || grads.size() != size_) {
    return absl::InvalidArgumentError(absl::StrCat("optimizer owns ", size_, " elements, got ",
                                                   params.size(), " parameters and ", grads.size(),
                                                   " gradients"));
  }
  BeginStep();
  return StepPiece(0, params, grads);
}

void Optimizer::BeginStep() {
  ++steps_;
  if (config_.kind == OptimizerKind::kAdam) {
    beta1_power_ *= config_.beta1;
    beta2_power_ *= config_.beta2;
  }
}

absl::Status Optimizer::StepPiece(size_t begin, absl::Span<float> params,
                                  absl::Span<const float> grads) {
  const size_t count = params.size();
  if (grads.size() != count || begin > size_ || count > size_ - begin) {
    return absl::InvalidArgumentError(absl::StrCat("a piece of ", params.size(), " parameters and ",
                                                   grads.size(), " gradients at ", begin,
                                                   " does not fit an optimizer of ", size_));
  }
  const float lr = config_.learning_rate;
  switch (config_.kind) {
    case OptimizerKind::kSgd:
      for (size_t i = 0; i < count; ++i) params[i] -= lr * grads[i];
      break;
    case OptimizerKind::kMomentum: {
      const float mu = config_.momentum;
      float* first = first_.data() + begin;
      for (size_t i = 0; i < count; ++i) {
        first[i] = mu * first[i] + grads[i];
        params[i] -= lr * first[i];
      }
      break;
    }
    case OptimizerKind::kAdam: {
      // Per-step scalars in double, rounded once to float: identical on every range split.
      const double root_bias2 = std::sqrt(1.0 - beta2_power_);
      const float step_size = static_cast<float>(lr * root_bias2 / (1.0 - beta1_power_));
      const float eps = static_cast<float>(config_.epsilon * root_bias2);
      const float b1 = config_.beta1, b2 = config_.beta2;
      const float c1 = 1.0f - b1, c2 = 1.0f - b2;
      float* first = first_.data() + begin;
      float* second = second_.data() + begin;
      for (size_t i = 0; i < count; ++i) {
        const float g = grads[i];
        first[i] = b1 * first[i] + c1 * g;
        second[i] = b2 * second[i] + c2 * (g * g);
        params[i] -= step_size * first[i] / (std::sqrt(second[i]) + eps);
      }
      break;
    }
  }
  return absl::OkStatus();
}

std::vector<float> Optimizer::ExportState() const {
  std::vector<float> state(state_size());
  ExportStateTo(absl::MakeSpan(state)).IgnoreError();  // sized to fit
  return state;
}

absl::Status Optimizer::ExportStateTo(absl::Span<float> state) const {
  if (state.size() != state_size()) {
    return absl::InvalidArgumentError(absl::StrCat("a buffer of ", state.size(),
                                                   " floats cannot take this optimizer's state (",
                                                   state_size(), ")"));
  }
  return ExportStatePiece(0, state);
}

absl::Status Optimizer::ImportState(absl::Span<const float> state) {
  if (state.size() != state_size()) {
    return absl::InvalidArgumentError(absl::StrCat("optimizer state of ", state.size(),
                                                   " floats does not fit this optimizer (",
                                                   state_size(), ")"));
  }
  return ImportStatePiece(0, state);
}

namespace {

// The runs of [offset, offset + count) of the layout [steps, first..., second...] that lie in
// each moment: calls visit(moment, index within it, position within the piece, length).
template <typename Visit>
void ForEachMomentRun(size_t offset, size_t count, size_t first, size_t second, Visit visit) {
  const size_t moment_begin[2] = {1, 1 + first};
  const size_t moment_size[2] = {first, second};
  for (int m = 0; m < 2; ++m) {
    const size_t begin = std::max(offset, moment_begin[m]);
    const size_t end = std::min(offset + count, moment_begin[m] + moment_size[m]);
    if (begin < end) visit(m, begin - moment_begin[m], begin - offset, end - begin);
  }
}

// The layout of the state of parameters [begin, end) alone (OptimizerStateRange): its step
// count, then each moment's elements of the range. For its elements [offset, offset + count)
// calls visit(index in the whole's layout, position within the piece, length) for each run
// contiguous in both.
template <typename Visit>
void ForEachRangeStateRun(size_t size, size_t begin, size_t end, size_t offset, size_t count,
                          Visit visit) {
  const size_t length = end - begin;
  for (size_t at = 0; at < count;) {
    const size_t position = offset + at;
    if (position == 0) {  // the step count
      visit(0, at, 1);
      ++at;
      continue;
    }
    const size_t moment = (position - 1) / length;
    const size_t index = (position - 1) % length;
    const size_t run = std::min(count - at, length - index);
    visit(1 + moment * size + begin + index, at, run);
    at += run;
  }
}

}  // namespace

absl::Status Optimizer::CheckPiece(size_t offset, size_t count) const {
  if (offset > state_size() || count > state_size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat("floats [", offset, ", ", offset + count,
                                                   ") lie outside this optimizer's state of ",
                                                   state_size()));
  }
  return absl::OkStatus();
}

absl::Status Optimizer::ExportStatePiece(size_t offset, absl::Span<float> piece) const {
  RETURN_IF_ERROR(CheckPiece(offset, piece.size()));
  if (offset == 0 && !piece.empty()) piece[0] = static_cast<float>(steps_);
  ForEachMomentRun(offset, piece.size(), first_.size(), second_.size(),
                   [&](int moment, size_t index, size_t at, size_t length) {
                     const std::vector<float>& source = moment == 0 ? first_ : second_;
                     std::copy_n(source.begin() + index, length, piece.begin() + at);
                   });
  return absl::OkStatus();
}

absl::Status Optimizer::ImportStatePiece(size_t offset, absl::Span<const float> piece) {
  RETURN_IF_ERROR(CheckPiece(offset, piece.size()));
  const bool holds_steps = offset == 0 && !piece.empty();
  if (holds_steps && (!(piece[0] >= 0) || piece[0] > (1 << 24))) {
    return absl::InvalidArgumentError(
        absl::StrCat("an optimizer state whose step count is ", piece[0]));
  }
  ForEachMomentRun(offset, piece.size(), first_.size(), second_.size(),
                   [&](int moment, size_t index, size_t at, size_t length) {
                     std::vector<float>& target = moment == 0 ? first_ : second_;
                     std::copy_n(piece.begin() + at, length, target.begin() + index);
                   });
  if (!holds_steps) return absl::OkStatus();
  steps_ = static_cast<int64_t>(piece[0]);
  // The same sequence of products Step() forms, so the powers are bit-identical.
  beta1_power_ = 1.0;
  beta2_power_ = 1.0;
  if (config_.kind == OptimizerKind::kAdam) {
    for (int64_t i = 0; i < steps_; ++i) {
      beta1_power_ *= config_.beta1;
      beta2_power_ *= config_.beta2;
    }
  }
  return absl::OkStatus();
}

absl::Status Optimizer::ExportRangeStatePiece(size_t begin, size_t end, size_t offset,
                                              absl::Span<float> piece) const {
  const size_t range_state = StateSize(config_.kind, end - begin);
  if (begin > end || end > size_ || offset > range_state || piece.size() > range_state - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "floats [", offset, ", ", offset + piece.size(), ") of the state of parameters [", begin,
        ", ", end, ") lie outside it or the range outside ", size_, " parameters"));
  }
  ForEachRangeStateRun(size_, begin, end, offset, piece.size(),
                       [&](size_t whole, size_t at, size_t length) {
                         // Within the state: the range and the piece were checked.
                         ExportStatePiece(whole, piece.subspan(at, length)).IgnoreError();
                       });
  return absl::OkStatus();
}

std::vector<float> OptimizerStateRange(absl::Span<const float> whole, size_t size, size_t begin,
                                       size_t end) {
  const size_t moments = size == 0 ? 0 : (whole.size() - 1) / size;
  std::vector<float> range(1 + moments * (end - begin));
  ForEachRangeStateRun(size, begin, end, 0, range.size(),
                       [&](size_t from, size_t at, size_t length) {
                         std::copy_n(whole.begin() + from, length, range.begin() + at);
                       });
  return range;
}

absl::Status PlaceOptimizerStateRange(absl::Span<const float> range, size_t size, size_t begin,
                                      size_t end, absl::Span<float> whole) {
  const size_t moments = size == 0 ? 0 : (whole.size() - 1) / size;
  if (whole.empty() || begin > end || end > size || whole.size() != 1 + moments * size ||
      range.size() != 1 + moments * (end - begin)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an optimiser state of ", range.size(), " floats for parameters [", begin, ", ", end,
        ") does not fit a state of ", whole.size(), " floats for ", size, " parameters"));
  }
  ForEachRangeStateRun(size, begin, end, 0, range.size(), [&](size_t to, size_t at, size_t length) {
    std::copy_n(range.begin() + at, length, whole.begin() + to);
  });
  return absl::OkStatus();
}

}  // namespace ringside
