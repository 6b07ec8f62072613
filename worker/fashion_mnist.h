// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017) from its original IDX files in a directory:
// train-images-idx3-ubyte, train-labels-idx1-ubyte (60,000 images) and t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte (10,000 held-out test images), each gzipped (NAME.gz, as Debian's
// dataset-fashion-mnist installs them) or not. Images are 28x28 greyscale, labels 0..9.
//
// Every file is checked as worker/idx_file.h says; besides, images and labels must agree in
// count, the training and test images in size, and every label must be one of the 10 classes.
// Pixels become floats in [0, 1] (value / 255), not standardised: the scale PyTorch's ToTensor
// gives, so the benchmark's DDP baseline trains on the same numbers.
// Thread-safe. Errors: NOT_FOUND naming the directory and the missing files; INVALID_ARGUMENT
// naming the file for anything malformed.
#ifndef RINGSIDE_WORKER_FASHION_MNIST_H_
#define RINGSIDE_WORKER_FASHION_MNIST_H_

#include <string>

#include "absl/status/statusor.h"
#include "worker/dataset.h"

namespace ringside::worker {

inline constexpr int kFashionMnistClasses = 10;

// OK when `directory` holds the four files (gzipped or not); nothing is read.
absl::Status CheckFashionMnistFiles(const std::string& directory);

// OK when `model` fits the images in `directory` (inputs = pixels per image, 10 classes), read
// from the training images' header alone; INVALID_ARGUMENT naming a model that would.
absl::Status CheckFashionMnistFitsModel(const std::string& directory, const ModelSpec& model);

// Both splits, named "fashion-mnist" (the test set "fashion-mnist test").
absl::StatusOr<DataSplits> LoadFashionMnist(const std::string& directory);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_FASHION_MNIST_H_
