#include "worker/cuda/cuda_gradient_computer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_util.h"
#include "worker/cuda/kernels.h"

namespace ringside::worker {
namespace {

using cuda::DeviceBuffer;

// cuBLAS is column-major; a row-major [r x c] matrix is a column-major [c x r] one, so each
// row-major product C = A * B below is issued as C^T = B^T * A^T.
class CudaGradientComputer final : public GradientComputer {
 public:
  CudaGradientComputer(ModelSpec spec, int device)
      : spec_(std::move(spec)),
        device_(device),
        pre_(spec_.num_weight_layers()),
        post_(spec_.num_weight_layers() - 1) {}
  ~CudaGradientComputer() override { cudaSetDevice(device_); }  // members free on our device

  absl::Status Init() {
    RINGSIDE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    RETURN_IF_ERROR(stream_.Create());
    RETURN_IF_ERROR(cublas_.Create(stream_.get()));
    RETURN_IF_ERROR(params_.Reserve(spec_.parameter_count()));
    return gradient_.Reserve(spec_.parameter_count());
  }

  const ModelSpec& spec() const override { return spec_; }
  std::string device() const override { return absl::StrCat("cuda:", device_); }

  absl::StatusOr<GradientStats> ComputeGradient(absl::Span<const float> params, const Batch& batch,
                                                absl::Span<float> gradient,
                                                const GradientOptions& options) override;
  absl::StatusOr<Evaluation> Evaluate(absl::Span<const float> params, const Batch& batch,
                                      absl::Span<int32_t> predictions) override;

 private:
  // Uploads parameters and batch, runs the forward pass and the softmax/loss kernel (writing the
  // output delta scaled by `scale` when `with_delta`), downloads per-row loss and argmax.
  absl::Status Forward(absl::Span<const float> params, const Batch& batch, bool with_delta,
                       float scale);
  absl::Status Backward(const Batch& batch, absl::Span<float> gradient,
                        const GradientOptions& options);
  const float* LayerInput(int l) const { return l == 0 ? features_.data() : post_[l - 1].data(); }
  cudaStream_t stream() const { return stream_.get(); }

  ModelSpec spec_;
  int device_;
  cuda::CudaStream stream_;  // declared before the handle: destroyed after it
  cuda::CublasHandle cublas_;
  DeviceBuffer<float> params_, gradient_, features_;
  DeviceBuffer<int32_t> labels_, predictions_;
  DeviceBuffer<float> row_loss_, delta_, delta_next_;
  std::vector<DeviceBuffer<float>> pre_, post_;
  std::vector<float> host_loss_;
  std::vector<int32_t> host_predictions_;
};

absl::Status CudaGradientComputer::Forward(absl::Span<const float> params, const Batch& batch,
                                           bool with_delta, float scale) {
  const int rows = static_cast<int>(batch.rows());
  const int last = spec_.num_weight_layers() - 1;
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  RETURN_IF_ERROR(features_.Reserve(batch.features.size()));
  RETURN_IF_ERROR(labels_.Reserve(rows));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(params_.data(), params.data(),
                                                params.size() * sizeof(float),
                                                cudaMemcpyHostToDevice, stream()));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(features_.data(), batch.features.data(),
                                                batch.features.size() * sizeof(float),
                                                cudaMemcpyHostToDevice, stream()));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(labels_.data(), batch.labels.data(),
                                                rows * sizeof(int32_t), cudaMemcpyHostToDevice,
                                                stream()));
  const float one = 1.0f;
  for (int l = 0; l <= last; ++l) {
    const LayerView<const float> layer =
        spec_.Layer(absl::Span<const float>(params_.data(), params.size()), l);
    const size_t n = static_cast<size_t>(rows) * layer.fan_out;
    RETURN_IF_ERROR(pre_[l].Reserve(n));
    RINGSIDE_CUDA_RETURN_IF_ERROR(
        cuda::BroadcastBias(layer.bias.data(), rows, layer.fan_out, pre_[l].data(), stream()));
    // z = in * W + z, issued as z^T = W^T * in^T.
    RINGSIDE_CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N,
                                                layer.fan_out, rows, layer.fan_in, &one,
                                                layer.weights.data(), layer.fan_out, LayerInput(l),
                                                layer.fan_in, &one, pre_[l].data(), layer.fan_out));
    if (l == last) break;
    RETURN_IF_ERROR(post_[l].Reserve(n));
    RINGSIDE_CUDA_RETURN_IF_ERROR(
        cuda::ActivateForward(spec_.activation(), pre_[l].data(), post_[l].data(), n, stream()));
  }
  const int classes = spec_.classes();
  RETURN_IF_ERROR(row_loss_.Reserve(rows));
  RETURN_IF_ERROR(predictions_.Reserve(rows));
  if (with_delta) RETURN_IF_ERROR(delta_.Reserve(static_cast<size_t>(rows) * classes));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cuda::SoftmaxCrossEntropy(
      pre_[last].data(), labels_.data(), rows, classes, scale, with_delta ? delta_.data() : nullptr,
      row_loss_.data(), predictions_.data(), stream()));
  host_loss_.resize(rows);
  host_predictions_.resize(rows);
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      host_loss_.data(), row_loss_.data(), rows * sizeof(float), cudaMemcpyDeviceToHost, stream()));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_predictions_.data(), predictions_.data(),
                                                rows * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                                stream()));
  return absl::OkStatus();
}

absl::Status CudaGradientComputer::Backward(const Batch& batch, absl::Span<float> gradient,
                                            const GradientOptions& options) {
  const int rows = static_cast<int>(batch.rows());
  const float one = 1.0f, zero = 0.0f;
  const absl::Span<const float> params(params_.data(), spec_.parameter_count());
  const absl::Span<float> grads(gradient_.data(), spec_.parameter_count());
  for (int l = spec_.num_weight_layers() - 1; l >= 0; --l) {
    const LayerView<const float> layer = spec_.Layer(params, l);
    const LayerView<float> grad = spec_.Layer(grads, l);
    // dW = in^T * delta, issued as dW^T = delta^T * in.
    RINGSIDE_CUBLAS_RETURN_IF_ERROR(
        cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, layer.fan_out, layer.fan_in, rows,
                    &one, delta_.data(), layer.fan_out, LayerInput(l), layer.fan_in, &zero,
                    grad.weights.data(), layer.fan_out));
    RINGSIDE_CUDA_RETURN_IF_ERROR(
        cuda::BiasGradient(delta_.data(), rows, layer.fan_out, grad.bias.data(), stream()));
    const ElementRange range = spec_.layer_range(l);
    RINGSIDE_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(gradient.data() + range.begin, gradient_.data() + range.begin,
                        range.size() * sizeof(float), cudaMemcpyDeviceToHost, stream()));
    if (options.on_layer_ready) {
      RINGSIDE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
      options.on_layer_ready(l, range);
    }
    if (l == 0) break;
    // delta_{l-1} = (delta * W^T) .* f'(z_{l-1}), issued as (delta * W^T)^T = W * delta^T.
    const size_t n = static_cast<size_t>(rows) * layer.fan_in;
    RETURN_IF_ERROR(delta_next_.Reserve(n));
    RINGSIDE_CUBLAS_RETURN_IF_ERROR(
        cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, layer.fan_in, rows, layer.fan_out,
                    &one, layer.weights.data(), layer.fan_out, delta_.data(), layer.fan_out, &zero,
                    delta_next_.data(), layer.fan_in));
    RINGSIDE_CUDA_RETURN_IF_ERROR(cuda::ActivateBackward(spec_.activation(), pre_[l - 1].data(),
                                                         post_[l - 1].data(), delta_next_.data(), n,
                                                         stream()));
    std::swap(delta_, delta_next_);
  }
  return cuda::CudaStatus(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

absl::StatusOr<GradientStats> CudaGradientComputer::ComputeGradient(
    absl::Span<const float> params, const Batch& batch, absl::Span<float> gradient,
    const GradientOptions& options) {
  RETURN_IF_ERROR(ValidateGradientCall(spec_, params, batch, gradient, options));
  if (batch.rows() == 0) return EmptyBatchGradient(spec_, gradient, options);
  GradientStats stats;
  stats.rows = batch.rows();
  const int64_t normalizer = options.normalizer_rows > 0 ? options.normalizer_rows : stats.rows;
  RETURN_IF_ERROR(Forward(params, batch, /*with_delta=*/true,
                          static_cast<float>(1.0 / static_cast<double>(normalizer))));
  RETURN_IF_ERROR(Backward(batch, gradient, options));  // synchronises the stream
  double loss = 0.0;
  for (int64_t r = 0; r < stats.rows; ++r) {
    loss += host_loss_[r];
    if (host_predictions_[r] == batch.labels[r]) ++stats.correct;
  }
  stats.mean_loss = loss / stats.rows;
  return stats;
}

absl::StatusOr<Evaluation> CudaGradientComputer::Evaluate(absl::Span<const float> params,
                                                          const Batch& batch,
                                                          absl::Span<int32_t> predictions) {
  RETURN_IF_ERROR(ValidateEvaluateCall(spec_, params, batch, predictions));
  Evaluation eval;
  eval.rows = batch.rows();
  if (eval.rows == 0) return eval;
  RETURN_IF_ERROR(Forward(params, batch, /*with_delta=*/false, 1.0f));
  RINGSIDE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  double loss = 0.0;
  for (int64_t r = 0; r < eval.rows; ++r) {
    loss += host_loss_[r];
    if (host_predictions_[r] == batch.labels[r]) ++eval.correct;
    if (!predictions.empty()) predictions[r] = host_predictions_[r];
  }
  eval.mean_loss = loss / eval.rows;
  eval.accuracy = static_cast<double>(eval.correct) / eval.rows;
  return eval;
}

}  // namespace

absl::StatusOr<int> CudaDevicesPresent() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(error)));
  }
  if (count < 1) {
    return absl::FailedPreconditionError("cudaGetDeviceCount reports 0 devices");
  }
  return count;
}

absl::StatusOr<std::unique_ptr<GradientComputer>> MakeCudaGradientComputer(const ModelSpec& model,
                                                                           int device) {
  ASSIGN_OR_RETURN(const int count, CudaDevicesPresent());
  if (device < 0 || device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA device ", device, " requested, ", count, " present"));
  }
  auto computer = std::make_unique<CudaGradientComputer>(model, device);
  RETURN_IF_ERROR(computer->Init());
  return computer;
}

}  // namespace ringside::worker
