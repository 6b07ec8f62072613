#include "worker/batching.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_cat.h"
#include "common/counter_rng.h"

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
    const float* src = data.x.data() + rows[i] * data.features;
    std::copy(src, src + data.features, out.features.begin() + i * data.features);
    out.labels[i] = data.y[rows[i]];
  }
}

}  // namespace ringside::worker
