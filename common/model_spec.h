// The model: a Spark-ML-style multilayer perceptron (`layers = [inputs, hidden..., classes]`),
// one activation on every hidden layer, softmax output and mean categorical cross-entropy.
//
// Flat layout: all parameters live in ONE contiguous float buffer (and each gradient in one of
// the same shape), layer by layer: W_0, b_0, W_1, b_1, ... W_l is [fan_in x fan_out] row-major
// (z = a * W_l + b_l for a row vector a). Views below slice a caller-owned flat span; buckets
// name element ranges of it in backprop order (last layer first) so communication of a finished
// layer can overlap the backprop of the earlier ones.
//
// Initialisation is a pure function of (spec, seed) built on counter-based hashing, so the same
// seed gives bit-identical parameters in every process and on every platform.
//
// ModelSpec is an immutable value: copyable, thread-safe to share. Parsers and Create return
// INVALID_ARGUMENT with a message naming the bad part; nothing aborts on user input.
#ifndef RINGSIDE_COMMON_MODEL_SPEC_H_
#define RINGSIDE_COMMON_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/activation.h"
#include "common/ranges.h"

namespace ringside {

inline constexpr int kMaxLayers = 64;                   // entries in the layer list
inline constexpr int kMaxLayerWidth = 1 << 20;          // units in one layer
inline constexpr uint64_t kMaxParameters = 1ull << 28;  // 1 GiB of float32

// "4,16,3" -> {4, 16, 3}. INVALID_ARGUMENT for fewer than 2 entries, a non-integer, a size < 1,
// a size above kMaxLayerWidth, more than kMaxLayers entries, or more than kMaxParameters
// parameters in total. Spaces around entries are allowed.
absl::StatusOr<std::vector<int>> ParseLayers(absl::string_view text);

// "sigmoid|tanh|relu|leaky_relu|elu|swish|softplus"; else INVALID_ARGUMENT.
absl::StatusOr<Activation> ParseActivation(absl::string_view name);
absl::string_view ActivationName(Activation activation);

// Per-layer slices of a flat buffer (parameters or gradients).
template <typename T>
struct LayerView {
  int fan_in = 0;
  int fan_out = 0;
  absl::Span<T> weights;  // fan_in * fan_out, row-major [fan_in][fan_out]
  absl::Span<T> bias;     // fan_out
};

// One gradient bucket: a contiguous element range covering whole layers [first_layer,
// last_layer] (first_layer <= last_layer).
struct GradientBucket {
  int first_layer = 0;
  int last_layer = 0;
  ElementRange range;
};

class ModelSpec {
 public:
  // Validates as ParseLayers does (layer sizes and parameter count).
  static absl::StatusOr<ModelSpec> Create(std::vector<int> layers, Activation activation);
  // ParseLayers + ParseActivation + Create.
  static absl::StatusOr<ModelSpec> Parse(absl::string_view layers, absl::string_view activation);

  const std::vector<int>& layers() const { return layers_; }
  Activation activation() const { return activation_; }
  int inputs() const { return layers_.front(); }
  int classes() const { return layers_.back(); }
  int num_weight_layers() const { return static_cast<int>(layers_.size()) - 1; }
  uint64_t parameter_count() const { return offsets_.back(); }
  int max_width() const;  // widest layer, for scratch sizing

  // Element ranges of layer l (0 <= l < num_weight_layers()) in the flat buffer.
  ElementRange weight_range(int l) const;
  ElementRange bias_range(int l) const;
  ElementRange layer_range(int l) const { return {offsets_[l], offsets_[l + 1]}; }

  LayerView<float> Layer(absl::Span<float> flat, int l) const;
  LayerView<const float> Layer(absl::Span<const float> flat, int l) const;

  // "4,16,3/tanh".
  std::string ToString() const;

 private:
  ModelSpec(std::vector<int> layers, Activation activation);

  std::vector<int> layers_;
  Activation activation_;
  std::vector<uint64_t> offsets_;  // offsets_[l] = first element of layer l; back() = total
};

// Buckets in backprop order (last layer first). Consecutive layers are merged until a bucket
// holds at least `min_elements` (0: one bucket per layer); the last bucket may be smaller. The
// buckets partition [0, parameter_count()). Pure; the same on every rank.
std::vector<GradientBucket> BackpropBuckets(const ModelSpec& spec, uint64_t min_elements = 0);

// Seeded initialisation into `params` (size parameter_count(), else INVALID_ARGUMENT): weights
// uniform in [-limit, limit] with limit = sqrt(6 / fan_in) (He) for relu-like activations and
// sqrt(6 / (fan_in + fan_out)) (Xavier/Glorot) otherwise and for the output layer; biases zero.
absl::Status InitializeParameters(const ModelSpec& spec, uint64_t seed, absl::Span<float> params);
std::vector<float> InitialParameters(const ModelSpec& spec, uint64_t seed);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_MODEL_SPEC_H_
