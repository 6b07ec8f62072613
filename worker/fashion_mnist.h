// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017) from its original IDX files in a directory:
// train-images-idx3-ubyte, train-labels-idx1-ubyte (60,000 images) and t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte (10,000 held-out test images), each gzipped (NAME.gz, as Debian's
// dataset-fashion-mnist installs them) or not. Images are 28x28 greyscale, labels 0..9.
//
// Every file is checked as worker/idx_file.h says; besides, images and labels must agree in
// count, the training and test images in size, and every label must be one of the 10 classes.
// Pixels stay bytes (Dataset::pixels): each is the float value / 255 in [0, 1], not standardised
// -- the scale PyTorch's ToTensor gives, so the benchmark's DDP baseline trains on the same
// numbers -- converted a batch at a time.
// Thread-safe. Errors: NOT_FOUND naming the directory and the missing files; INVALID_ARGUMENT
// naming the file for anything malformed.
#ifndef RINGSIDE_WORKER_FASHION_MNIST_H_
#define RINGSIDE_WORKER_FASHION_MNIST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/model_spec.h"
#include "worker/data_splits.h"

namespace ringside::worker {

inline constexpr int kFashionMnistClasses = 10;

inline constexpr char kFashionMnistDefaultDir[] = "/usr/share/datasets/fashion-mnist";

// OK when `directory` holds the four files (gzipped or not); nothing is read.
absl::Status CheckFashionMnistFiles(const std::string& directory);

// OK when `model` fits the images in `directory` (inputs = pixels per image, 10 classes), read
// from the training images' header alone; INVALID_ARGUMENT naming a model that would.
absl::Status CheckFashionMnistFitsModel(const std::string& directory, const ModelSpec& model);

// Both splits, named "fashion-mnist" (the test set "fashion-mnist test"), every row stored.
absl::StatusOr<DataSplits> LoadFashionMnist(const std::string& directory);
// The training split with every label but the pixels of `rows` alone (ascending, distinct, each
// below the image count; else INVALID_ARGUMENT): every image is read and checked, one block at a
// time, so the memory is the kept rows' (empty `rows`: none, a check of the whole file).
absl::StatusOr<Dataset> LoadFashionMnistTrainingRows(const std::string& directory,
                                                     absl::Span<const int64_t> rows);
// The test split alone, every row stored.
absl::StatusOr<Dataset> LoadFashionMnistTestSet(const std::string& directory);
// The test split's labels, its images read and checked but none stored: `images_path` names
// their file, which EvaluateDataset reads a piece at a time.
absl::StatusOr<Dataset> LoadFashionMnistTestLabels(const std::string& directory);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_FASHION_MNIST_H_
