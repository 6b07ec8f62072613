#include "worker/streamed_forward_pass.h"

#include <cblas.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/activation.h"
#include "common/status_macros.h"
#include "worker/cpu_gradient_computer.h"

namespace ringside::worker {

StreamedForwardPass::StreamedForwardPass(ModelSpec spec, Options options)
    : spec_(std::move(spec)), options_(options) {}

absl::Status StreamedForwardPass::ReadValues(const ScratchFile& parameters, uint64_t first,
                                             absl::Span<float> out) {
  return parameters.Read(first * sizeof(float), absl::MakeSpan(reinterpret_cast<char*>(out.data()),
                                                               out.size() * sizeof(float)));
}

absl::Status StreamedForwardPass::Layer(const ScratchFile& parameters, int l, int rows,
                                        const float* input) {
  const int fan_in = spec_.layers()[l];
  const int fan_out = spec_.layers()[l + 1];
  output_.resize(static_cast<size_t>(rows) * fan_out);
  block_.resize(fan_out);
  RETURN_IF_ERROR(ReadValues(parameters, spec_.bias_range(l).begin, absl::MakeSpan(block_)));
  for (int r = 0; r < rows; ++r) {
    std::copy(block_.begin(), block_.end(), output_.begin() + static_cast<size_t>(r) * fan_out);
  }
  const uint64_t row_bytes = static_cast<uint64_t>(fan_out) * sizeof(float);
  const int block_rows = static_cast<int>(
      std::clamp<uint64_t>(options_.block_bytes / row_bytes, 1, static_cast<uint64_t>(fan_in)));
  const uint64_t weights = spec_.weight_range(l).begin;
  for (int first = 0; first < fan_in; first += block_rows) {
    const int count = std::min(block_rows, fan_in - first);
    block_.resize(static_cast<size_t>(count) * fan_out);
    RETURN_IF_ERROR(ReadValues(parameters, weights + static_cast<uint64_t>(first) * fan_out,
                               absl::MakeSpan(block_)));
    // output += input[:, first .. first + count) * W[first .. first + count, :].
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, fan_out, count, 1.0f,
                input + first, fan_in, block_.data(), fan_out, 1.0f, output_.data(), fan_out);
  }
  return absl::OkStatus();
}

absl::StatusOr<Evaluation> StreamedForwardPass::Evaluate(const ScratchFile& parameters,
                                                         const Batch& batch) {
  RETURN_IF_ERROR(ValidateBatchRows(spec_, batch));
  if (parameters.size() != spec_.parameter_count() * sizeof(float)) {
    return absl::InvalidArgumentError(absl::StrCat(parameters.path(), " holds ", parameters.size(),
                                                   " bytes, not the ", spec_.parameter_count(),
                                                   " floats of model ", spec_.ToString()));
  }
  Evaluation eval;
  eval.rows = batch.rows();
  if (eval.rows == 0) return eval;
  const int rows = static_cast<int>(batch.rows());
  const int last = spec_.num_weight_layers() - 1;
  for (int l = 0; l <= last; ++l) {
    RETURN_IF_ERROR(Layer(parameters, l, rows, l == 0 ? batch.features.data() : input_.data()));
    if (l == last) break;
    const Activation act = spec_.activation();
    for (float& value : output_) value = Activate(act, value);
    std::swap(input_, output_);
  }
  eval.mean_loss = SoftmaxCrossEntropy(absl::MakeSpan(output_), spec_.classes(), batch.labels,
                                       &eval.correct, {}) /
                   eval.rows;
  eval.accuracy = static_cast<double>(eval.correct) / eval.rows;
  return eval;
}

void StreamedForwardPass::Release() {
  for (std::vector<float>* buffer : {&block_, &input_, &output_}) {
    buffer->clear();
    buffer->shrink_to_fit();
  }
}

}  // namespace ringside::worker
