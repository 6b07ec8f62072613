// CPU GradientComputer: OpenBLAS sgemm for the matrix products, plain loops for bias,
// activations, softmax and cross-entropy. Contract, ownership and thread-safety as in
// worker/gradient_computer.h; scratch buffers grow to the largest batch seen and are reused.
// OpenBLAS may use several threads inside one call (OPENBLAS_NUM_THREADS limits them).
#ifndef RINGSIDE_WORKER_CPU_GRADIENT_COMPUTER_H_
#define RINGSIDE_WORKER_CPU_GRADIENT_COMPUTER_H_

#include <string>
#include <vector>

#include "worker/gradient_computer.h"

namespace ringside::worker {

// Softmax of `labels.size()` rows of `classes` logits in place; returns the summed cross-entropy
// against `labels`, counts the rows whose argmax is their label into *correct, and writes each
// row's argmax into `predictions` unless it is empty. Labels must be within [0, classes).
double SoftmaxCrossEntropy(absl::Span<float> logits, int classes, absl::Span<const int32_t> labels,
                           int64_t* correct, absl::Span<int32_t> predictions);

class CpuGradientComputer final : public GradientComputer {
 public:
  explicit CpuGradientComputer(ModelSpec spec);

  const ModelSpec& spec() const override { return spec_; }
  std::string device() const override { return "cpu"; }

  absl::StatusOr<GradientStats> ComputeGradient(absl::Span<const float> params, const Batch& batch,
                                                absl::Span<float> gradient,
                                                const GradientOptions& options) override;
  absl::StatusOr<Evaluation> Evaluate(absl::Span<const float> params, const Batch& batch,
                                      absl::Span<int32_t> predictions) override;

 private:
  // Fills pre_[l] and post_[l] for every layer; the last pre_ holds the logits.
  void Forward(absl::Span<const float> params, const Batch& batch);
  // Input of weight layer l: the batch features for l == 0, else post_[l - 1].
  const float* LayerInput(const Batch& batch, int l) const;
  // From the output delta in delta_ down to layer 0, writing `gradient` layer by layer.
  void Backward(absl::Span<const float> params, const Batch& batch, absl::Span<float> gradient,
                const GradientOptions& options);

  ModelSpec spec_;
  std::vector<std::vector<float>> pre_;   // z_l = in * W_l + b_l, rows x fan_out(l)
  std::vector<std::vector<float>> post_;  // f(z_l) for hidden layers
  std::vector<float> delta_;              // dloss/dz of the layer being back-propagated
  std::vector<float> delta_next_;         // dloss/d(input) of that layer
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_CPU_GRADIENT_COMPUTER_H_
