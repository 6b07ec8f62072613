// Training data: the Iris data set (data/iris.csv, embedded into the library at build time) and a
// seeded synthetic generator of Gaussian clusters, both z-scored per feature, and Fashion-MNIST
// (worker/fashion_mnist.h: IDX files read from a directory, pixels scaled to [0, 1], with its
// held-out test set). Selected with `--data=iris|synthetic:ROWS|fashion-mnist[:DIR]`; the model's
// first and last layer sizes must fit (Iris: 4 inputs, 3 classes; synthetic: any, taken from the
// model; Fashion-MNIST: 784 inputs, 10 classes).
//
// Memory: Fashion-MNIST keeps its pixels as bytes (a quarter of floats; GatherRows converts a
// batch at a time to exactly the floats value / 255.0f), and a training set loaded with
// TrainingRows::kOnDemand keeps the features of no rows until LoadTrainingRows fetches the rows
// some steps need (worker/data_parallel.h keeps a window of them): every label stays.
//
// Ownership: a Dataset owns its rows; Batch views into it live as long as it does.
// Thread-safety: Datasets are plain values, safe to read from many threads; the functions are
// pure (the synthetic generator depends only on its arguments) apart from reading Fashion-MNIST's
// files. Errors: INVALID_ARGUMENT for bad specs, malformed CSV or IDX files and a model that does
// not fit the data; NOT_FOUND naming a missing file.
#ifndef RINGSIDE_WORKER_DATASET_H_
#define RINGSIDE_WORKER_DATASET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/model_spec.h"
#include "worker/data_splits.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

struct DataSpec {
  enum class Kind { kIris, kSynthetic, kFashionMnist };
  Kind kind = Kind::kIris;
  int64_t rows = 0;            // kSynthetic only, in [1, kMaxSyntheticRows]
  std::string directory = {};  // kFashionMnist only: where its four IDX files are
  std::string ToString() const;
};

// "iris" | "synthetic:ROWS" | "fashion-mnist" (Debian's dataset-fashion-mnist, in
// kFashionMnistDefaultDir) | "fashion-mnist:DIR"; else INVALID_ARGUMENT.
absl::StatusOr<DataSpec> ParseDataSpec(absl::string_view text);

// ParseDataSpec, and for Fashion-MNIST that its directory holds the four files (without reading
// them): what a command checks before it starts processes that would load the data.
absl::Status CheckDataSpec(absl::string_view text);
// CheckDataSpec, and that `model` fits the data (Fashion-MNIST: from the images' header alone;
// synthetic data fits any model).
absl::Status CheckDataFitsModel(absl::string_view text, const ModelSpec& model);

// A header line, then rows of numeric features with the class name in the last column. Classes
// are numbered by first appearance. Not standardised.
absl::StatusOr<Dataset> ParseCsvDataset(absl::string_view csv, absl::string_view name);

// data/iris.csv as compiled into the library (generated from the file by CMake).
absl::string_view IrisCsv();

// Gaussian clusters: class c has a centre with coordinates uniform in [-2, 2]; row i has label
// i % classes and features centre + N(0, 1) noise (counter-based, identical everywhere). Not
// standardised. Requires rows >= 1, features >= 1, classes >= 2.
Dataset MakeSyntheticDataset(int64_t rows, int features, int classes, uint64_t seed);

// Z-scores every feature over all rows (population standard deviation; a constant feature
// becomes 0). Statistics in double, so the result is deterministic.
void Standardize(Dataset& data);

// Which rows' features LoadDataSplits keeps: every row's, or -- where they can be read again,
// Fashion-MNIST from its files -- none (every image is still read and checked, every label
// kept), leaving the training rows some steps need to LoadTrainingRows and the test set to be
// read a piece at a time by each evaluation (Dataset::images_path). Iris and synthetic data are
// generated whole and keep every row either way.
enum class TrainingRows { kAll, kOnDemand };

// The data set named by `spec` (Iris and synthetic data standardised, Fashion-MNIST's pixels in
// [0, 1]) with its test set, checked against the model's input and class counts. `seed` drives
// the synthetic generator only.
absl::StatusOr<DataSplits> LoadDataSplits(const DataSpec& spec, const ModelSpec& model,
                                          uint64_t seed, TrainingRows rows = TrainingRows::kAll);
// The training set keeping the features of `rows` alone (ascending, distinct, each below the
// training set's row count; else INVALID_ARGUMENT) where the data can be read again
// (Fashion-MNIST); other data whole, as LoadDataset gives it.
absl::StatusOr<Dataset> LoadTrainingRows(const DataSpec& spec, const ModelSpec& model,
                                         uint64_t seed, absl::Span<const int64_t> rows);
// LoadDataSplits' training rows.
absl::StatusOr<Dataset> LoadDataset(const DataSpec& spec, const ModelSpec& model, uint64_t seed);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_DATASET_H_
