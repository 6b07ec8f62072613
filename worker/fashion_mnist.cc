#include "worker/fashion_mnist.h"

#include <sys/stat.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/idx_file.h"

namespace ringside::worker {
namespace {

constexpr const char* kFiles[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

bool IsFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// DIR/NAME.gz, else DIR/NAME; empty when neither is a file.
std::string FileOf(const std::string& directory, const std::string& name) {
  const std::string base = absl::StrCat(directory, "/", name);
  if (IsFile(base + ".gz")) return base + ".gz";
  if (IsFile(base)) return base;
  return "";
}

// The labels of `labels_path`, which must number `count`, each one of the classes.
absl::StatusOr<std::vector<int32_t>> ReadLabels(const std::string& labels_path,
                                                const std::string& images_path, int64_t count) {
  ASSIGN_OR_RETURN(const std::vector<uint8_t> labels,
                   ReadIdxLabels(labels_path, static_cast<uint64_t>(kMaxSyntheticRows)));
  if (static_cast<int64_t>(labels.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, " holds ", labels.size(),
                                                   " labels but ", images_path, " holds ", count,
                                                   " images"));
  }
  std::vector<int32_t> out(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= kFashionMnistClasses) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", int{labels[i]},
                                                     " of image ", i, " is not one of the ",
                                                     kFashionMnistClasses, " classes"));
    }
    out[i] = labels[i];
  }
  return out;
}

// One split from its two files: every label, and the pixels of `rows` (every image's when
// nullopt), kept as bytes.
absl::StatusOr<Dataset> LoadSplit(const std::string& images_path, const std::string& labels_path,
                                  const std::string& name,
                                  std::optional<absl::Span<const int64_t>> rows) {
  IdxImages images;
  if (rows.has_value()) {
    ASSIGN_OR_RETURN(images, ReadIdxImageRows(images_path, kMaxSyntheticValues, *rows));
  } else {
    ASSIGN_OR_RETURN(images, ReadIdxImages(images_path, kMaxSyntheticValues));
  }
  Dataset data;
  ASSIGN_OR_RETURN(data.y, ReadLabels(labels_path, images_path, images.count));
  data.name = name;
  data.features = static_cast<int>(images.pixels_per_image());
  data.classes = kFashionMnistClasses;
  data.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  data.pixels = std::move(images.pixels);
  if (rows.has_value()) data.stored_rows.emplace(rows->begin(), rows->end());
  return data;
}

}  // namespace

absl::Status CheckFashionMnistFiles(const std::string& directory) {
  std::vector<std::string> missing;
  for (const char* name : kFiles) {
    if (FileOf(directory, name).empty()) missing.push_back(absl::StrCat(name, ".gz"));
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "fashion-mnist: ", directory, " lacks ", absl::StrJoin(missing, ", "),
      " (it needs the four IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
      "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, gzipped or not; Debian's "
      "dataset-fashion-mnist installs them in ",
      kFashionMnistDefaultDir, ")"));
}

absl::Status CheckFashionMnistFitsModel(const std::string& directory, const ModelSpec& model) {
  RETURN_IF_ERROR(CheckFashionMnistFiles(directory));
  ASSIGN_OR_RETURN(const IdxImages header, ReadIdxImagesHeader(FileOf(directory, kFiles[0])));
  if (model.inputs() == header.pixels_per_image() && model.classes() == kFashionMnistClasses) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "model ", model.ToString(), " does not fit fashion-mnist (", header.pixels_per_image(),
      " inputs, ", kFashionMnistClasses, " classes): use a model like ", header.pixels_per_image(),
      ",16,", kFashionMnistClasses));
}

absl::StatusOr<DataSplits> LoadFashionMnist(const std::string& directory) {
  RETURN_IF_ERROR(CheckFashionMnistFiles(directory));
  DataSplits splits;
  ASSIGN_OR_RETURN(splits.train,
                   LoadSplit(FileOf(directory, kFiles[0]), FileOf(directory, kFiles[1]),
                             "fashion-mnist", std::nullopt));
  ASSIGN_OR_RETURN(splits.test, LoadFashionMnistTestSet(directory));
  if (splits.train.features != splits.test.features) {
    return absl::InvalidArgumentError(
        absl::StrCat(FileOf(directory, kFiles[2]), ": test images have ", splits.test.features,
                     " pixels, the training images ", splits.train.features));
  }
  return splits;
}

absl::StatusOr<Dataset> LoadFashionMnistTrainingRows(const std::string& directory,
                                                     absl::Span<const int64_t> rows) {
  RETURN_IF_ERROR(CheckFashionMnistFiles(directory));
  return LoadSplit(FileOf(directory, kFiles[0]), FileOf(directory, kFiles[1]), "fashion-mnist",
                   rows);
}

absl::StatusOr<Dataset> LoadFashionMnistTestSet(const std::string& directory) {
  RETURN_IF_ERROR(CheckFashionMnistFiles(directory));
  return LoadSplit(FileOf(directory, kFiles[2]), FileOf(directory, kFiles[3]), "fashion-mnist test",
                   std::nullopt);
}

absl::StatusOr<Dataset> LoadFashionMnistTestLabels(const std::string& directory) {
  RETURN_IF_ERROR(CheckFashionMnistFiles(directory));
  ASSIGN_OR_RETURN(Dataset data,
                   LoadSplit(FileOf(directory, kFiles[2]), FileOf(directory, kFiles[3]),
                             "fashion-mnist test", absl::Span<const int64_t>()));
  data.images_path = FileOf(directory, kFiles[2]);
  return data;
}

}  // namespace ringside::worker
