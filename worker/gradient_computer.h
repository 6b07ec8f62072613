// The worker's compute interface: loss and flat gradient of the model for one batch, plus
// evaluation. Implementations: CPU (BLAS, always built) and CUDA (cuBLAS + own kernels, built
// when CMake finds CUDA); make one with MakeGradientComputer (worker/device.h).
//
// Gradient scaling for data parallelism (the contract the sync layer relies on):
//   ComputeGradient writes  g = (1 / normalizer_rows) * sum over the local rows of dloss_i/dparams.
// With normalizer_rows = 0 it is the batch's own row count (the plain mean gradient). A
// data-parallel worker passes the GLOBAL batch size (BatchSchedule::global_batch()), so its
// gradient is pre-scaled by its share local_rows / global_rows; a SUM over workers (ring
// allreduce or the PS adding pushes) then yields exactly the mean gradient of the global batch,
// whether or not the global batch divides evenly by the number of workers. Never divide by N.
//
// Ownership: a computer owns its scratch memory (host or device); parameters, batches and output
// gradients are caller-owned and only read/written during the call.
// Thread-safety: thread-compatible; one call at a time per instance (use one per worker thread).
// Errors: INVALID_ARGUMENT for mismatched sizes or labels outside [0, classes); INTERNAL for a
// device failure (CUDA error text included). No call aborts on bad input.
#ifndef RINGSIDE_WORKER_GRADIENT_COMPUTER_H_
#define RINGSIDE_WORKER_GRADIENT_COMPUTER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/model_spec.h"
#include "common/ranges.h"

namespace ringside::worker {

inline constexpr int64_t kMaxBatchRows = 1 << 24;

// A batch view: `rows` rows of `features` floats (row-major) and one label per row.
struct Batch {
  absl::Span<const float> features;  // rows * spec.inputs()
  absl::Span<const int32_t> labels;  // rows, each in [0, spec.classes())
  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

struct GradientOptions {
  // Divide the summed per-row gradients by this many rows; 0 = the batch's own rows. Data-
  // parallel workers pass the global batch size (see the file comment).
  int64_t normalizer_rows = 0;
  // Called once per layer in backprop order (last layer first) as soon as that layer's slice of
  // the output gradient (ModelSpec::layer_range) holds its final values, on the calling thread.
  // Lets the sync layer start sending a bucket while earlier layers are still being computed.
  std::function<void(int layer, ElementRange range)> on_layer_ready;
};

struct GradientStats {
  double mean_loss = 0.0;  // cross-entropy averaged over the local rows (0 for an empty batch)
  int64_t rows = 0;
  int64_t correct = 0;  // rows whose argmax prediction (before this step's update) was right
  // NaN or infinite values of the share, which TrainStep sent as zeros (worker/data_parallel.h).
  int64_t non_finite = 0;
};

struct Evaluation {
  double mean_loss = 0.0;
  double accuracy = 0.0;  // correct / rows; 0 for no rows
  int64_t rows = 0;
  int64_t correct = 0;
};

class GradientComputer {
 public:
  virtual ~GradientComputer() = default;

  virtual const ModelSpec& spec() const = 0;
  // "cpu" or "cuda:<i>".
  virtual std::string device() const = 0;

  // Forward and backward pass; writes every element of `gradient` (size parameter_count()).
  // An empty batch gives a zero gradient and zero stats.
  virtual absl::StatusOr<GradientStats> ComputeGradient(absl::Span<const float> params,
                                                        const Batch& batch,
                                                        absl::Span<float> gradient,
                                                        const GradientOptions& options = {}) = 0;

  // Forward pass only: loss and accuracy against the labels; the argmax class of each row goes
  // into `predictions` unless it is empty (else it must have batch.rows() elements).
  virtual absl::StatusOr<Evaluation> Evaluate(absl::Span<const float> params, const Batch& batch,
                                              absl::Span<int32_t> predictions) = 0;
};

// Shared by implementations. ValidateBatchRows: feature sizes and label range; ValidateBatch:
// those and the parameters' size.
absl::Status ValidateBatchRows(const ModelSpec& spec, const Batch& batch);
absl::Status ValidateBatch(const ModelSpec& spec, absl::Span<const float> params,
                           const Batch& batch);
// ValidateBatch plus the predictions' size (empty, or one per row).
absl::Status ValidateEvaluateCall(const ModelSpec& spec, absl::Span<const float> params,
                                  const Batch& batch, absl::Span<const int32_t> predictions);
// ValidateBatch plus the gradient size and a non-negative normalizer.
absl::Status ValidateGradientCall(const ModelSpec& spec, absl::Span<const float> params,
                                  const Batch& batch, absl::Span<const float> gradient,
                                  const GradientOptions& options);
// `computer.Evaluate` over `batch` in pieces of at most `chunk_rows` rows (>= 1), summed: the
// same figures as one call, with scratch memory for one piece only (a forward pass over 10,000
// rows of a 1024-wide model would hold hundreds of MiB of activations).
absl::StatusOr<Evaluation> EvaluateInChunks(GradientComputer& computer,
                                            absl::Span<const float> params, const Batch& batch,
                                            int64_t chunk_rows = 1024);
// The result for an empty batch: zero gradient, every layer reported ready in backprop order.
GradientStats EmptyBatchGradient(const ModelSpec& spec, absl::Span<float> gradient,
                                 const GradientOptions& options);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_GRADIENT_COMPUTER_H_
