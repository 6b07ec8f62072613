// A data set's rows in memory (Dataset) and its training and held-out test sets (DataSplits):
// what every loader fills (worker/dataset.h for Iris and synthetic data, worker/fashion_mnist.h),
// and the size limits they all keep to. Memory and ownership as worker/dataset.h says.
// Thread-safety: plain values, safe to read from many threads.
#ifndef RINGSIDE_WORKER_DATA_SPLITS_H_
#define RINGSIDE_WORKER_DATA_SPLITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

inline constexpr int64_t kMaxSyntheticRows = 10'000'000;
inline constexpr uint64_t kMaxSyntheticValues = 1ull << 28;  // rows * features (1 GiB)

// A byte feature b is the float b / kByteFeatureScale (Fashion-MNIST's pixels, in [0, 1]).
inline constexpr float kByteFeatureScale = 255.0f;
inline float ByteFeature(uint8_t b) { return b / kByteFeatureScale; }

struct Dataset {
  std::string name;  // "iris", "synthetic:1000"
  int features = 0;
  int classes = 0;
  // The stored rows' features, row-major, in one of two forms: floats in `x` (Iris, synthetic
  // data) or bytes in `pixels` (Fashion-MNIST), the other empty.
  std::vector<float> x;
  std::vector<uint8_t> pixels;
  // Whose features are stored: every row's in order when empty (nullopt), else these rows'
  // (ascending, distinct), in this order.
  std::optional<std::vector<int64_t>> stored_rows;
  // Where every row's byte features can be read again, in row order (an IDX images file:
  // worker/idx_file.h), for a set that stores none of them: EvaluateDataset reads it a piece at
  // a time. Empty otherwise.
  std::string images_path;
  std::vector<int32_t> y;                // every row's label, in [0, classes)
  std::vector<std::string> class_names;  // empty for synthetic data

  int64_t rows() const { return static_cast<int64_t>(y.size()); }
  // Rows whose features are stored.
  int64_t stored_row_count() const;
  // Bytes the features and labels take (what a loader's choices change).
  size_t DataBytes() const;
  // Whether the features of every one of `rows` are stored.
  bool Holds(absl::Span<const int64_t> rows) const;
  bool HoldsEveryRow() const { return stored_row_count() == this->rows(); }
  // Row `row`'s features as floats into out[0, features). Requires Holds({row}).
  void CopyFeatures(int64_t row, float* out) const;
  // Every row as one batch view: float features with every row stored only (Iris, synthetic
  // data); anything else goes through GatherRows or EvaluateDataset (worker/batching.h).
  Batch AllRows() const { return {x, y}; }
};

// A data set's training rows and, where it has one, its held-out test set (Fashion-MNIST's
// 10,000 images). Iris and synthetic data have none: `test` has no rows.
struct DataSplits {
  Dataset train;
  Dataset test;
  bool has_test() const { return test.rows() > 0; }
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_DATA_SPLITS_H_
