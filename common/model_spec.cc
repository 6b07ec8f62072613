#include "common/model_spec.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/counter_rng.h"

namespace ringside {
namespace {

constexpr struct {
  Activation activation;
  absl::string_view name;
} kActivationNames[] = {
    {Activation::kSigmoid, "sigmoid"},   {Activation::kTanh, "tanh"},
    {Activation::kRelu, "relu"},         {Activation::kLeakyRelu, "leaky_relu"},
    {Activation::kElu, "elu"},           {Activation::kSwish, "swish"},
    {Activation::kSoftplus, "softplus"},
};

uint64_t CountParameters(const std::vector<int>& layers) {
  uint64_t total = 0;
  for (size_t l = 0; l + 1 < layers.size(); ++l) {
    total += static_cast<uint64_t>(layers[l]) * layers[l + 1] + layers[l + 1];
  }
  return total;
}

absl::Status ValidateLayers(const std::vector<int>& layers) {
  if (layers.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("model needs at least 2 layers (inputs and classes), got ", layers.size()));
  }
  if (layers.size() > static_cast<size_t>(kMaxLayers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model has ", layers.size(), " layers; at most ", kMaxLayers));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < 1 || layers[i] > kMaxLayerWidth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", i, " has size ", layers[i], "; sizes must be in [1, ", kMaxLayerWidth, "]"));
    }
  }
  if (layers.back() < 2) {
    return absl::InvalidArgumentError("the last layer (classes) must have at least 2 units");
  }
  if (const uint64_t count = CountParameters(layers); count > kMaxParameters) {
    return absl::InvalidArgumentError(
        absl::StrCat("model has ", count, " parameters; at most ", kMaxParameters));
  }
  return absl::OkStatus();
}

bool ReluLike(Activation a) {
  return a == Activation::kRelu || a == Activation::kLeakyRelu || a == Activation::kElu;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseLayers(absl::string_view text) {
  std::vector<int> layers;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    int64_t size = 0;
    if (!absl::SimpleAtoi(part, &size)) {
      return absl::InvalidArgumentError(absl::StrCat("bad model '", text, "': '", part,
                                                     "' is not an integer (want e.g. 4,16,3)"));
    }
    if (size < 1 || size > kMaxLayerWidth) {
      return absl::InvalidArgumentError(absl::StrCat("bad model '", text, "': layer size ", size,
                                                     " is outside [1, ", kMaxLayerWidth, "]"));
    }
    layers.push_back(static_cast<int>(size));
  }
  if (absl::Status status = ValidateLayers(layers); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad model '", text, "': ", status.message()));
  }
  return layers;
}

absl::StatusOr<Activation> ParseActivation(absl::string_view name) {
  for (const auto& entry : kActivationNames) {
    if (entry.name == name) return entry.activation;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown activation '", name,
                   "' (want sigmoid, tanh, relu, leaky_relu, elu, swish or softplus)"));
}

absl::string_view ActivationName(Activation activation) {
  for (const auto& entry : kActivationNames) {
    if (entry.activation == activation) return entry.name;
  }
  return "unknown";
}

absl::StatusOr<ModelSpec> ModelSpec::Create(std::vector<int> layers, Activation activation) {
  if (absl::Status status = ValidateLayers(layers); !status.ok()) return status;
  if (ActivationName(activation) == "unknown") {
    return absl::InvalidArgumentError("unknown activation value");
  }
  return ModelSpec(std::move(layers), activation);
}

absl::StatusOr<ModelSpec> ModelSpec::Parse(absl::string_view layers, absl::string_view activation) {
  absl::StatusOr<std::vector<int>> parsed_layers = ParseLayers(layers);
  if (!parsed_layers.ok()) return parsed_layers.status();
  absl::StatusOr<Activation> parsed_activation = ParseActivation(activation);
  if (!parsed_activation.ok()) return parsed_activation.status();
  return Create(*std::move(parsed_layers), *parsed_activation);
}

ModelSpec::ModelSpec(std::vector<int> layers, Activation activation)
    : layers_(std::move(layers)), activation_(activation) {
  offsets_.push_back(0);
  for (size_t l = 0; l + 1 < layers_.size(); ++l) {
    offsets_.push_back(offsets_.back() + static_cast<uint64_t>(layers_[l]) * layers_[l + 1] +
                       layers_[l + 1]);
  }
}

int ModelSpec::max_width() const { return *std::max_element(layers_.begin(), layers_.end()); }

ElementRange ModelSpec::weight_range(int l) const {
  return {offsets_[l], offsets_[l] + static_cast<uint64_t>(layers_[l]) * layers_[l + 1]};
}

ElementRange ModelSpec::bias_range(int l) const { return {weight_range(l).end, offsets_[l + 1]}; }

LayerView<float> ModelSpec::Layer(absl::Span<float> flat, int l) const {
  const ElementRange w = weight_range(l), b = bias_range(l);
  return {layers_[l], layers_[l + 1], flat.subspan(w.begin, w.size()),
          flat.subspan(b.begin, b.size())};
}

LayerView<const float> ModelSpec::Layer(absl::Span<const float> flat, int l) const {
  const ElementRange w = weight_range(l), b = bias_range(l);
  return {layers_[l], layers_[l + 1], flat.subspan(w.begin, w.size()),
          flat.subspan(b.begin, b.size())};
}

std::string ModelSpec::ToString() const {
  return absl::StrCat(absl::StrJoin(layers_, ","), "/", ActivationName(activation_));
}

std::vector<GradientBucket> BackpropBuckets(const ModelSpec& spec, uint64_t min_elements) {
  std::vector<GradientBucket> buckets;
  for (int l = spec.num_weight_layers() - 1; l >= 0; --l) {
    const ElementRange range = spec.layer_range(l);
    if (!buckets.empty() && buckets.back().range.size() < min_elements) {
      buckets.back().first_layer = l;  // extend downwards: layers are adjacent in memory
      buckets.back().range.begin = range.begin;
    } else {
      buckets.push_back({l, l, range});
    }
  }
  return buckets;
}

absl::Status InitializeParameters(const ModelSpec& spec, uint64_t seed, absl::Span<float> params) {
  if (params.size() != spec.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("parameter buffer has ", params.size(),
                                                   " elements, model ", spec.ToString(), " needs ",
                                                   spec.parameter_count()));
  }
  const int last = spec.num_weight_layers() - 1;
  for (int l = 0; l <= last; ++l) {
    LayerView<float> layer = spec.Layer(params, l);
    const double fan_sum = l < last && ReluLike(spec.activation())
                               ? layer.fan_in
                               : static_cast<double>(layer.fan_in) + layer.fan_out;
    const double limit = std::sqrt(6.0 / fan_sum);
    const uint64_t first = spec.weight_range(l).begin;
    for (size_t i = 0; i < layer.weights.size(); ++i) {
      const double u = CounterUniform(seed, RngStream::kParameters, first + i);
      layer.weights[i] = static_cast<float>((2.0 * u - 1.0) * limit);
    }
    std::fill(layer.bias.begin(), layer.bias.end(), 0.0f);
  }
  return absl::OkStatus();
}

std::vector<float> InitialParameters(const ModelSpec& spec, uint64_t seed) {
  std::vector<float> params(spec.parameter_count());
  InitializeParameters(spec, seed, absl::MakeSpan(params)).IgnoreError();  // size is right
  return params;
}

}  // namespace ringside
