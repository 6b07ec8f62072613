#include "worker/batching.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/counter_rng.h"
#include "common/status_macros.h"
#include "worker/idx_file.h"

namespace ringside::worker {
namespace {

constexpr int kFeistelRounds = 6;

// A bijection of [0, 4^half_bits) keyed by `key`: a balanced Feistel network.
uint64_t Feistel(uint64_t x, int half_bits, uint64_t key) {
  const uint64_t mask = (uint64_t{1} << half_bits) - 1;
  uint64_t left = x >> half_bits, right = x & mask;
  for (int round = 0; round < kFeistelRounds; ++round) {
    const uint64_t f = Mix64(key ^ (static_cast<uint64_t>(round) << 56) ^ right) & mask;
    const uint64_t next_right = left ^ f;
    left = right;
    right = next_right;
  }
  return (left << half_bits) | right;
}

}  // namespace

ElementRange WorkerSlice(int64_t global_batch, int rank, int world) {
  assert(world >= 1 && rank >= 0 && rank < world && global_batch >= 0);
  return EvenRanges(static_cast<uint64_t>(global_batch), world)[rank];
}

absl::StatusOr<BatchSchedule> BatchSchedule::Create(int64_t dataset_rows, int64_t global_batch,
                                                    uint64_t seed) {
  if (dataset_rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("data set has ", dataset_rows, " rows"));
  }
  if (global_batch < 1 || global_batch > kMaxBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", global_batch, " outside [1, ", kMaxBatchRows, "]"));
  }
  return BatchSchedule(dataset_rows, global_batch, seed);
}

BatchSchedule::BatchSchedule(int64_t dataset_rows, int64_t global_batch, uint64_t seed)
    : dataset_rows_(dataset_rows), global_batch_(global_batch), seed_(seed), half_bits_(1) {
  while ((uint64_t{1} << (2 * half_bits_)) < static_cast<uint64_t>(dataset_rows_)) ++half_bits_;
}

int64_t BatchSchedule::RowAt(int64_t position) const {
  const uint64_t epoch = static_cast<uint64_t>(position / dataset_rows_);
  const uint64_t key = CounterBits(seed_, RngStream::kEpochShuffle, epoch);
  uint64_t x = static_cast<uint64_t>(position % dataset_rows_);
  // Cycle walking: the domain is under 4x the rows, so this takes < 4 rounds on average.
  do {
    x = Feistel(x, half_bits_, key);
  } while (x >= static_cast<uint64_t>(dataset_rows_));
  return static_cast<int64_t>(x);
}

std::vector<int64_t> BatchSchedule::GlobalBatchRows(int64_t step) const {
  return WorkerBatchRows(step, 0, 1);
}

std::vector<int64_t> BatchSchedule::WorkerBatchRows(int64_t step, int rank, int world) const {
  const ElementRange slice = WorkerSlice(global_batch_, rank, world);
  std::vector<int64_t> rows;
  rows.reserve(slice.size());
  const int64_t first = step * global_batch_;
  for (uint64_t p = slice.begin; p < slice.end; ++p) {
    rows.push_back(RowAt(first + static_cast<int64_t>(p)));
  }
  return rows;
}

void GatherRows(const Dataset& data, absl::Span<const int64_t> rows, OwnedBatch& out) {
  out.features.resize(rows.size() * data.features);
  out.labels.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    data.CopyFeatures(rows[i], out.features.data() + i * data.features);
    out.labels[i] = data.y[rows[i]];
  }
}

namespace {

// Loss and accuracy summed over pieces as EvaluateInChunks sums them, so the figures are the same
// bit for bit.
class EvaluationSum {
 public:
  void Add(const Evaluation& part) {
    loss_sum_ += part.mean_loss * part.rows;
    total_.rows += part.rows;
    total_.correct += part.correct;
  }
  Evaluation Total() const {
    Evaluation total = total_;
    if (total.rows > 0) {
      total.mean_loss = loss_sum_ / total.rows;
      total.accuracy = static_cast<double>(total.correct) / total.rows;
    }
    return total;
  }

 private:
  Evaluation total_;
  double loss_sum_ = 0;
};

// EvaluateDataset for a set whose rows are in its images file: the file is read front to back,
// a piece at a time, and must still hold the set's rows of the set's size.
absl::StatusOr<Evaluation> EvaluateFromFile(const PieceEvaluation& evaluate, const Dataset& data,
                                            int64_t chunk_rows) {
  ASSIGN_OR_RETURN(IdxImageReader reader,
                   IdxImageReader::Open(data.images_path, kMaxSyntheticValues));
  if (reader.header().count != data.rows() || reader.header().pixels_per_image() != data.features) {
    return absl::FailedPreconditionError(
        absl::StrCat(data.images_path, " now holds ", reader.header().count, " images of ",
                     reader.header().pixels_per_image(), " pixels, ", data.name, " had ",
                     data.rows(), " of ", data.features));
  }
  std::vector<uint8_t> bytes;
  OwnedBatch piece;
  EvaluationSum sum;
  for (int64_t begin = 0; begin < data.rows(); begin += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, data.rows() - begin);
    bytes.resize(static_cast<size_t>(rows * data.features));
    RETURN_IF_ERROR(reader.Next(rows, bytes.data()));
    piece.features.resize(bytes.size());
    std::transform(bytes.begin(), bytes.end(), piece.features.begin(), ByteFeature);
    piece.labels.assign(data.y.begin() + begin, data.y.begin() + begin + rows);
    ASSIGN_OR_RETURN(const Evaluation part, evaluate(piece.view()));
    sum.Add(part);
  }
  RETURN_IF_ERROR(reader.Finish());
  return sum.Total();
}

}  // namespace

absl::StatusOr<Evaluation> EvaluateDataset(GradientComputer& computer,
                                           absl::Span<const float> params, const Dataset& data,
                                           int64_t chunk_rows) {
  RETURN_IF_ERROR(ValidateEvaluateCall(computer.spec(), params, Batch{}, {}));
  return EvaluateDatasetWith(
      [&](const Batch& piece) { return computer.Evaluate(params, piece, {}); }, data, chunk_rows);
}

absl::StatusOr<Evaluation> EvaluateDatasetWith(const PieceEvaluation& evaluate, const Dataset& data,
                                               int64_t chunk_rows) {
  chunk_rows = std::max<int64_t>(1, chunk_rows);
  if (!data.HoldsEveryRow()) {
    if (data.stored_row_count() == 0 && !data.images_path.empty()) {
      return EvaluateFromFile(evaluate, data, chunk_rows);
    }
    return absl::FailedPreconditionError(
        absl::StrCat(data.name, " holds the features of ", data.stored_row_count(), " of its ",
                     data.rows(), " rows: an evaluation needs them all"));
  }
  std::vector<int64_t> rows;
  OwnedBatch piece;
  EvaluationSum sum;
  for (int64_t begin = 0; begin < data.rows(); begin += chunk_rows) {
    rows.resize(static_cast<size_t>(std::min(chunk_rows, data.rows() - begin)));
    std::iota(rows.begin(), rows.end(), begin);
    GatherRows(data, rows, piece);
    ASSIGN_OR_RETURN(const Evaluation part, evaluate(piece.view()));
    sum.Add(part);
  }
  return sum.Total();
}

}  // namespace ringside::worker
