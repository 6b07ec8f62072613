#include "worker/cpu_gradient_computer.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::worker {

CpuGradientComputer::CpuGradientComputer(ModelSpec spec)
    : spec_(std::move(spec)),
      pre_(spec_.num_weight_layers()),
      post_(spec_.num_weight_layers() - 1) {}

const float* CpuGradientComputer::LayerInput(const Batch& batch, int l) const {
  return l == 0 ? batch.features.data() : post_[l - 1].data();
}

void CpuGradientComputer::Forward(absl::Span<const float> params, const Batch& batch) {
  const int rows = static_cast<int>(batch.rows());
  const int last = spec_.num_weight_layers() - 1;
  for (int l = 0; l <= last; ++l) {
    const LayerView<const float> layer = spec_.Layer(params, l);
    std::vector<float>& z = pre_[l];
    z.resize(static_cast<size_t>(rows) * layer.fan_out);
    for (int r = 0; r < rows; ++r) {
      std::copy(layer.bias.begin(), layer.bias.end(),
                z.begin() + static_cast<size_t>(r) * layer.fan_out);
    }
    // z = in * W + z (z already holds the bias rows).
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, layer.fan_out, layer.fan_in, 1.0f,
                LayerInput(batch, l), layer.fan_in, layer.weights.data(), layer.fan_out, 1.0f,
                z.data(), layer.fan_out);
    if (l == last) break;
    std::vector<float>& a = post_[l];
    a.resize(z.size());
    const Activation act = spec_.activation();
    for (size_t i = 0; i < z.size(); ++i) a[i] = Activate(act, z[i]);
  }
}

double SoftmaxCrossEntropy(absl::Span<float> logits, int classes, absl::Span<const int32_t> labels,
                           int64_t* correct, absl::Span<int32_t> predictions) {
  double loss = 0.0;
  *correct = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    float* row = logits.data() + r * classes;
    const int argmax = static_cast<int>(std::max_element(row, row + classes) - row);
    const float max = row[argmax];
    const int label = labels[r];
    const float label_logit = row[label] - max;
    float sum = 0.0f;
    for (int c = 0; c < classes; ++c) {
      row[c] = std::exp(row[c] - max);
      sum += row[c];
    }
    loss += std::log(static_cast<double>(sum)) - label_logit;  // -log softmax(z)_label
    for (int c = 0; c < classes; ++c) row[c] /= sum;
    if (argmax == label) ++*correct;
    if (!predictions.empty()) predictions[r] = argmax;
  }
  return loss;
}

absl::StatusOr<GradientStats> CpuGradientComputer::ComputeGradient(absl::Span<const float> params,
                                                                   const Batch& batch,
                                                                   absl::Span<float> gradient,
                                                                   const GradientOptions& options) {
  RETURN_IF_ERROR(ValidateGradientCall(spec_, params, batch, gradient, options));
  const int rows = static_cast<int>(batch.rows());
  if (rows == 0) return EmptyBatchGradient(spec_, gradient, options);
  GradientStats stats;
  stats.rows = rows;
  Forward(params, batch);
  stats.mean_loss = SoftmaxCrossEntropy(absl::MakeSpan(pre_.back()), spec_.classes(), batch.labels,
                                        &stats.correct, {}) /
                    rows;

  // Output delta: (softmax - onehot) / normalizer; pre_.back() holds the softmax now.
  const int64_t normalizer = options.normalizer_rows > 0 ? options.normalizer_rows : rows;
  const float scale = static_cast<float>(1.0 / static_cast<double>(normalizer));
  const int classes = spec_.classes();
  delta_ = pre_.back();
  for (int r = 0; r < rows; ++r) delta_[static_cast<size_t>(r) * classes + batch.labels[r]] -= 1.0f;
  for (float& d : delta_) d *= scale;
  Backward(params, batch, gradient, options);
  return stats;
}

void CpuGradientComputer::Backward(absl::Span<const float> params, const Batch& batch,
                                   absl::Span<float> gradient, const GradientOptions& options) {
  const int rows = static_cast<int>(batch.rows());
  for (int l = spec_.num_weight_layers() - 1; l >= 0; --l) {
    const LayerView<const float> layer = spec_.Layer(params, l);
    LayerView<float> grad = spec_.Layer(gradient, l);
    // dW = in^T * delta; db = column sums of delta.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, layer.fan_in, layer.fan_out, rows, 1.0f,
                LayerInput(batch, l), layer.fan_in, delta_.data(), layer.fan_out, 0.0f,
                grad.weights.data(), layer.fan_out);
    std::fill(grad.bias.begin(), grad.bias.end(), 0.0f);
    for (int r = 0; r < rows; ++r) {
      const float* d = delta_.data() + static_cast<size_t>(r) * layer.fan_out;
      for (int c = 0; c < layer.fan_out; ++c) grad.bias[c] += d[c];
    }
    if (options.on_layer_ready) options.on_layer_ready(l, spec_.layer_range(l));
    if (l == 0) break;
    // delta for layer l - 1: (delta * W^T) .* f'(z_{l-1}).
    delta_next_.resize(static_cast<size_t>(rows) * layer.fan_in);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, layer.fan_in, layer.fan_out, 1.0f,
                delta_.data(), layer.fan_out, layer.weights.data(), layer.fan_out, 0.0f,
                delta_next_.data(), layer.fan_in);
    const std::vector<float>& z = pre_[l - 1];
    const std::vector<float>& a = post_[l - 1];
    const Activation act = spec_.activation();
    for (size_t i = 0; i < delta_next_.size(); ++i) {
      delta_next_[i] *= ActivateDerivative(act, z[i], a[i]);
    }
    std::swap(delta_, delta_next_);
  }
}

absl::StatusOr<Evaluation> CpuGradientComputer::Evaluate(absl::Span<const float> params,
                                                         const Batch& batch,
                                                         absl::Span<int32_t> predictions) {
  RETURN_IF_ERROR(ValidateEvaluateCall(spec_, params, batch, predictions));
  Evaluation eval;
  eval.rows = batch.rows();
  if (eval.rows == 0) return eval;
  Forward(params, batch);
  eval.mean_loss = SoftmaxCrossEntropy(absl::MakeSpan(pre_.back()), spec_.classes(), batch.labels,
                                       &eval.correct, predictions) /
                   eval.rows;
  eval.accuracy = static_cast<double>(eval.correct) / eval.rows;
  return eval;
}

}  // namespace ringside::worker
