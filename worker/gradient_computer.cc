#include "worker/gradient_computer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::worker {

absl::Status ValidateBatch(const ModelSpec& spec, absl::Span<const float> params,
                           const Batch& batch) {
  if (params.size() != spec.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("got ", params.size(), " parameters, model ",
                                                   spec.ToString(), " has ",
                                                   spec.parameter_count()));
  }
  return ValidateBatchRows(spec, batch);
}

absl::Status ValidateBatchRows(const ModelSpec& spec, const Batch& batch) {
  if (batch.rows() > kMaxBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", batch.rows(), " rows; at most ", kMaxBatchRows));
  }
  const uint64_t want = static_cast<uint64_t>(batch.rows()) * spec.inputs();
  if (batch.features.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.features.size(),
                                                   " feature values, want ", batch.rows(), " x ",
                                                   spec.inputs()));
  }
  for (int64_t i = 0; i < batch.rows(); ++i) {
    if (batch.labels[i] < 0 || batch.labels[i] >= spec.classes()) {
      return absl::InvalidArgumentError(absl::StrCat("label ", batch.labels[i], " of row ", i,
                                                     " is outside [0, ", spec.classes(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateEvaluateCall(const ModelSpec& spec, absl::Span<const float> params,
                                  const Batch& batch, absl::Span<const int32_t> predictions) {
  if (absl::Status status = ValidateBatch(spec, params, batch); !status.ok()) return status;
  if (!predictions.empty() && predictions.size() != static_cast<size_t>(batch.rows())) {
    return absl::InvalidArgumentError(absl::StrCat("predictions has ", predictions.size(),
                                                   " elements, batch ", batch.rows(), " rows"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGradientCall(const ModelSpec& spec, absl::Span<const float> params,
                                  const Batch& batch, absl::Span<const float> gradient,
                                  const GradientOptions& options) {
  if (absl::Status status = ValidateBatch(spec, params, batch); !status.ok()) return status;
  if (gradient.size() != spec.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("gradient buffer has ", gradient.size(),
                                                   " elements, want ", spec.parameter_count()));
  }
  if (options.normalizer_rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("normalizer_rows must be >= 0, got ", options.normalizer_rows));
  }
  return absl::OkStatus();
}

GradientStats EmptyBatchGradient(const ModelSpec& spec, absl::Span<float> gradient,
                                 const GradientOptions& options) {
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  for (int l = spec.num_weight_layers() - 1; l >= 0 && options.on_layer_ready; --l) {
    options.on_layer_ready(l, spec.layer_range(l));
  }
  return GradientStats{};
}

absl::StatusOr<Evaluation> EvaluateInChunks(GradientComputer& computer,
                                            absl::Span<const float> params, const Batch& batch,
                                            int64_t chunk_rows) {
  chunk_rows = std::max<int64_t>(1, chunk_rows);
  RETURN_IF_ERROR(ValidateEvaluateCall(computer.spec(), params, batch, {}));
  const int64_t inputs = computer.spec().inputs();
  Evaluation total;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < batch.rows(); begin += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, batch.rows() - begin);
    const Batch piece{batch.features.subspan(begin * inputs, rows * inputs),
                      batch.labels.subspan(begin, rows)};
    ASSIGN_OR_RETURN(const Evaluation part, computer.Evaluate(params, piece, {}));
    loss_sum += part.mean_loss * part.rows;
    total.rows += part.rows;
    total.correct += part.correct;
  }
  if (total.rows > 0) {
    total.mean_loss = loss_sum / total.rows;
    total.accuracy = static_cast<double>(total.correct) / total.rows;
  }
  return total;
}

}  // namespace ringside::worker
