// Which data rows each training step uses, and how data-parallel workers split them.
//
// Step t's global batch is positions [t*B, (t+1)*B) of an endless sequence of epochs, each epoch
// a seeded pseudo-random permutation of the data set's rows (a keyed Feistel permutation with
// cycle walking: O(1) per row, no shuffled copy). It depends only on (rows, B, seed, t) -- never
// on the number of workers -- so N workers together always process the same global batch.
// Worker r of N takes the r-th of EvenRanges(B, N) positions (sizes differ by at most one; with
// B < N some workers get none). For the exact global mean gradient pass
// normalizer_rows = global_batch() to GradientComputer::ComputeGradient and SUM the workers'
// gradients (see worker/gradient_computer.h).
//
// Everything here is thread-safe and, apart from the computer EvaluateDataset calls, pure;
// BatchSchedule is an immutable value.
// Errors: Create returns INVALID_ARGUMENT for empty data or a batch size < 1 or > kMaxBatchRows.
#ifndef RINGSIDE_WORKER_BATCHING_H_
#define RINGSIDE_WORKER_BATCHING_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/ranges.h"
#include "worker/dataset.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

// Positions [begin, end) of a global batch that worker `rank` of `world` owns. Requires
// 0 <= rank < world and global_batch >= 0.
ElementRange WorkerSlice(int64_t global_batch, int rank, int world);

class BatchSchedule {
 public:
  static absl::StatusOr<BatchSchedule> Create(int64_t dataset_rows, int64_t global_batch,
                                              uint64_t seed);

  int64_t dataset_rows() const { return dataset_rows_; }
  int64_t global_batch() const { return global_batch_; }

  // Row of the data set at position `position` (>= 0) of the epoch sequence.
  int64_t RowAt(int64_t position) const;
  // Data-set rows of step `step`'s global batch (global_batch() entries; step >= 0).
  std::vector<int64_t> GlobalBatchRows(int64_t step) const;
  // The part of GlobalBatchRows(step) that worker `rank` of `world` computes.
  std::vector<int64_t> WorkerBatchRows(int64_t step, int rank, int world) const;

 private:
  BatchSchedule(int64_t dataset_rows, int64_t global_batch, uint64_t seed);

  int64_t dataset_rows_;
  int64_t global_batch_;
  uint64_t seed_;
  int half_bits_;  // the Feistel domain is [0, 4^half_bits_) >= dataset_rows_
};

// Copies of some rows of a data set, ready to hand to a GradientComputer.
struct OwnedBatch {
  std::vector<float> features;
  std::vector<int32_t> labels;
  Batch view() const { return {features, labels}; }
};

// Fills `out` with the given rows of `data` as floats (every one must be stored:
// data.Holds(rows)).
void GatherRows(const Dataset& data, absl::Span<const int64_t> rows, OwnedBatch& out);

// `computer.Evaluate` over every row of `data` in pieces of at most `chunk_rows` rows (>= 1),
// each gathered as floats just before its pass -- or, for a set that stores no row but names
// its images file (Dataset::images_path), read from that file -- the figures EvaluateInChunks
// gives on the rows as floats, bit for bit, with memory for one piece (the default's
// activations are those of a training batch of 256 rows: a larger piece made every worker's
// final evaluation its peak, 19 MiB of activations on a model with two layers of 2400).
// FAILED_PRECONDITION when `data` holds only some rows or its file no longer has its shape; the
// file's errors as worker/idx_file.h says; else as EvaluateInChunks.
absl::StatusOr<Evaluation> EvaluateDataset(GradientComputer& computer,
                                           absl::Span<const float> params, const Dataset& data,
                                           int64_t chunk_rows = 256);

// One piece's evaluation, for EvaluateDatasetWith.
using PieceEvaluation = std::function<absl::StatusOr<Evaluation>(const Batch& piece)>;
// EvaluateDataset with `evaluate` in the place of a computer's pass over given parameters (the
// test evaluator's, worker/streamed_forward_pass.h), which validates what it evaluates.
absl::StatusOr<Evaluation> EvaluateDatasetWith(const PieceEvaluation& evaluate, const Dataset& data,
                                               int64_t chunk_rows = 256);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_BATCHING_H_
