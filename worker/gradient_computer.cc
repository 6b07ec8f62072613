#include "worker/gradient_computer.h"

#include "absl/strings/str_cat.h"

namespace ringside::worker {

absl::Status ValidateBatch(const ModelSpec& spec, absl::Span<const float> params,
                           const Batch& batch) {
  if (params.size() != spec.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("got ", params.size(), " parameters, model ",
                                                   spec.ToString(), " has ",
                                                   spec.parameter_count()));
  }
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

}  // namespace ringside::worker
