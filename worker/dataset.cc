#include "worker/dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/counter_rng.h"
#include "common/status_macros.h"
#include "worker/fashion_mnist.h"

namespace ringside::worker {
namespace {

constexpr absl::string_view kSyntheticPrefix = "synthetic:";
constexpr absl::string_view kFashionMnist = "fashion-mnist";

// One CSV data line into `data`; `line_number` is 1-based for messages.
absl::Status ParseCsvRow(absl::string_view line, int line_number, int columns, Dataset& data) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
  if (static_cast<int>(fields.size()) != columns) {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_number, " has ", fields.size(),
                                                   " fields, the header ", columns));
  }
  for (int j = 0; j + 1 < columns; ++j) {
    float value = 0.0f;
    if (!absl::SimpleAtof(absl::StripAsciiWhitespace(fields[j]), &value) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": '", fields[j], "' is not a number"));
    }
    data.x.push_back(value);
  }
  const absl::string_view name = absl::StripAsciiWhitespace(fields.back());
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": empty class"));
  }
  auto it = std::find(data.class_names.begin(), data.class_names.end(), name);
  if (it == data.class_names.end()) it = data.class_names.insert(it, std::string(name));
  data.y.push_back(static_cast<int32_t>(it - data.class_names.begin()));
  return absl::OkStatus();
}

}  // namespace

std::string DataSpec::ToString() const {
  switch (kind) {
    case Kind::kIris:
      return "iris";
    case Kind::kSynthetic:
      return absl::StrCat(kSyntheticPrefix, rows);
    case Kind::kFashionMnist:
      return directory == kFashionMnistDefaultDir ? std::string(kFashionMnist)
                                                  : absl::StrCat(kFashionMnist, ":", directory);
  }
  return "";
}

absl::StatusOr<DataSpec> ParseDataSpec(absl::string_view text) {
  if (text == "iris") return DataSpec{DataSpec::Kind::kIris, 0, ""};
  if (absl::StartsWith(text, kSyntheticPrefix)) {
    int64_t rows = 0;
    if (absl::SimpleAtoi(text.substr(kSyntheticPrefix.size()), &rows) && rows >= 1 &&
        rows <= kMaxSyntheticRows) {
      return DataSpec{DataSpec::Kind::kSynthetic, rows, ""};
    }
    return absl::InvalidArgumentError(absl::StrCat("bad data '", text, "': ROWS in synthetic:ROWS",
                                                   " must be an integer in [1, ", kMaxSyntheticRows,
                                                   "]"));
  }
  if (text == kFashionMnist) {
    return DataSpec{DataSpec::Kind::kFashionMnist, 0, kFashionMnistDefaultDir};
  }
  if (absl::StartsWith(text, kFashionMnist) && text.size() > kFashionMnist.size() &&
      text[kFashionMnist.size()] == ':') {
    const absl::string_view directory = text.substr(kFashionMnist.size() + 1);
    if (directory.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad data '", text, "': give the directory, fashion-mnist:DIR"));
    }
    return DataSpec{DataSpec::Kind::kFashionMnist, 0, std::string(directory)};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data '", text, "' (want iris, synthetic:ROWS, fashion-mnist or fashion-mnist:DIR)"));
}

absl::Status CheckDataSpec(absl::string_view text) {
  ASSIGN_OR_RETURN(const DataSpec spec, ParseDataSpec(text));
  if (spec.kind == DataSpec::Kind::kFashionMnist) {
    return CheckFashionMnistFiles(spec.directory);
  }
  return absl::OkStatus();
}

absl::StatusOr<Dataset> ParseCsvDataset(absl::string_view csv, absl::string_view name) {
  Dataset data;
  data.name = std::string(name);
  int columns = 0;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);  // also drops a '\r'
    if (line.empty()) continue;
    if (columns == 0) {  // header
      columns = static_cast<int>(std::vector<absl::string_view>(absl::StrSplit(line, ',')).size());
      if (columns < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": header needs a feature and a class column"));
      }
      continue;
    }
    if (absl::Status status = ParseCsvRow(line, line_number, columns, data); !status.ok()) {
      return Annotate(status, name);
    }
  }
  data.features = columns - 1;
  data.classes = static_cast<int>(data.class_names.size());
  if (data.rows() == 0 || data.classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": needs at least one row and two classes"));
  }
  return data;
}

Dataset MakeSyntheticDataset(int64_t rows, int features, int classes, uint64_t seed) {
  Dataset data;
  data.name = absl::StrCat(kSyntheticPrefix, rows);
  data.features = features;
  data.classes = classes;
  std::vector<double> centres(static_cast<size_t>(classes) * features);
  for (size_t i = 0; i < centres.size(); ++i) {
    centres[i] = 4.0 * CounterUniform(seed, RngStream::kClusterCenters, i) - 2.0;
  }
  data.x.resize(static_cast<size_t>(rows) * features);
  data.y.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t label = static_cast<int32_t>(r % classes);
    data.y[r] = label;
    const double* centre = centres.data() + static_cast<size_t>(label) * features;
    float* row = data.x.data() + r * features;
    for (int j = 0; j < features; ++j) {
      const uint64_t index = static_cast<uint64_t>(r) * features + j;
      row[j] =
          static_cast<float>(centre[j] + CounterNormal(seed, RngStream::kSyntheticRows, index));
    }
  }
  return data;
}

void Standardize(Dataset& data) {
  const int64_t rows = data.rows();
  if (rows == 0) return;
  for (int j = 0; j < data.features; ++j) {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += data.x[r * data.features + j];
    const double mean = sum / rows;
    double squares = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const double d = data.x[r * data.features + j] - mean;
      squares += d * d;
    }
    const double sd = std::sqrt(squares / rows);
    for (int64_t r = 0; r < rows; ++r) {
      float& v = data.x[r * data.features + j];
      v = sd > 0.0 ? static_cast<float>((v - mean) / sd) : 0.0f;
    }
  }
}

namespace {

absl::Status CheckModelFits(const ModelSpec& model, const Dataset& data);

}  // namespace

absl::Status CheckDataFitsModel(absl::string_view text, const ModelSpec& model) {
  ASSIGN_OR_RETURN(const DataSpec spec, ParseDataSpec(text));
  switch (spec.kind) {
    case DataSpec::Kind::kFashionMnist:
      return CheckFashionMnistFitsModel(spec.directory, model);
    case DataSpec::Kind::kIris: {
      ASSIGN_OR_RETURN(const Dataset iris, ParseCsvDataset(IrisCsv(), "iris"));
      return CheckModelFits(model, iris);
    }
    case DataSpec::Kind::kSynthetic:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckModelFits(const ModelSpec& model, const Dataset& data) {
  if (model.inputs() == data.features && model.classes() == data.classes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model ", model.ToString(), " does not fit ", data.name, " (", data.features, " inputs, ",
      data.classes, " classes): use a model like ", data.features, ",16,", data.classes));
}

}  // namespace

// Fashion-MNIST's names as the spec gives them: the directory where it is not the default.
void NameFashionMnist(const DataSpec& spec, Dataset& data, absl::string_view suffix) {
  if (spec.directory != kFashionMnistDefaultDir) data.name = absl::StrCat(spec.ToString(), suffix);
}

absl::StatusOr<DataSplits> LoadDataSplits(const DataSpec& spec, const ModelSpec& model,
                                          uint64_t seed, TrainingRows rows) {
  if (spec.kind == DataSpec::Kind::kFashionMnist) {
    DataSplits splits;
    if (rows == TrainingRows::kAll) {
      ASSIGN_OR_RETURN(splits, LoadFashionMnist(spec.directory));
    } else {
      ASSIGN_OR_RETURN(splits.train, LoadFashionMnistTrainingRows(spec.directory, {}));
      ASSIGN_OR_RETURN(splits.test, LoadFashionMnistTestLabels(spec.directory));
    }
    NameFashionMnist(spec, splits.train, "");
    NameFashionMnist(spec, splits.test, " test");
    RETURN_IF_ERROR(CheckModelFits(model, splits.train));
    RETURN_IF_ERROR(Annotate(CheckModelFits(model, splits.test), "the test set"));
    return splits;
  }
  DataSplits splits;
  ASSIGN_OR_RETURN(splits.train, LoadDataset(spec, model, seed));
  return splits;
}

absl::StatusOr<Dataset> LoadTrainingRows(const DataSpec& spec, const ModelSpec& model,
                                         uint64_t seed, absl::Span<const int64_t> rows) {
  if (spec.kind != DataSpec::Kind::kFashionMnist) return LoadDataset(spec, model, seed);
  ASSIGN_OR_RETURN(Dataset data, LoadFashionMnistTrainingRows(spec.directory, rows));
  NameFashionMnist(spec, data, "");
  RETURN_IF_ERROR(CheckModelFits(model, data));
  return data;
}

absl::StatusOr<Dataset> LoadDataset(const DataSpec& spec, const ModelSpec& model, uint64_t seed) {
  Dataset data;
  if (spec.kind == DataSpec::Kind::kFashionMnist) {
    ASSIGN_OR_RETURN(DataSplits splits, LoadDataSplits(spec, model, seed));
    return std::move(splits.train);
  }
  if (spec.kind == DataSpec::Kind::kIris) {
    ASSIGN_OR_RETURN(data, ParseCsvDataset(IrisCsv(), "iris"));
    RETURN_IF_ERROR(CheckModelFits(model, data));
  } else {
    if (spec.rows < 1 || spec.rows > kMaxSyntheticRows) {
      return absl::InvalidArgumentError(
          absl::StrCat("synthetic rows ", spec.rows, " outside [1, ", kMaxSyntheticRows, "]"));
    }
    if (static_cast<uint64_t>(spec.rows) * model.inputs() > kMaxSyntheticValues) {
      return absl::InvalidArgumentError(absl::StrCat("synthetic:", spec.rows, " with ",
                                                     model.inputs(), " features exceeds ",
                                                     kMaxSyntheticValues, " values"));
    }
    data = MakeSyntheticDataset(spec.rows, model.inputs(), model.classes(), seed);
  }
  Standardize(data);
  return data;
}

}  // namespace ringside::worker
