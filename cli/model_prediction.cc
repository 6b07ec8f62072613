#include "cli/model_prediction.h"

#include <cmath>

#include "common/cost_model.h"

namespace ringside::cli {
namespace {

ModelBytes PredictRing(uint64_t elements, int workers, double element_bytes) {
  ModelBytes model;
  model.per_worker = RingElementsSentByRank(elements, workers, 0) * element_bytes;
  // Chunk sizes differ by one element when N does not divide K, so the ranks' sends differ by
  // up to two elements: take the largest, which is the busiest receiver's ingress.
  int busiest_sender = 0;
  uint64_t most = 0;
  for (int rank = 0; rank < workers; ++rank) {
    const uint64_t sent = RingElementsSentByRank(elements, workers, rank);
    if (sent > most) {
      most = sent;
      busiest_sender = rank;
    }
  }
  model.busiest_node = most * element_bytes;
  model.busiest_node_name = WorkerName(workers > 1 ? (busiest_sender + 1) % workers : 0);
  return model;
}

ModelBytes PredictPs(uint64_t elements, int workers, int shards, double element_bytes) {
  ModelBytes model;
  uint64_t sent = 0;
  int largest_shard = 0;
  uint64_t largest = 0;
  for (int shard = 0; shard < shards; ++shard) {
    const uint64_t share = PsElementsPerShardLink(elements, shards, shard);
    sent += share;
    if (share > largest) {
      largest = share;
      largest_shard = shard;
    }
  }
  model.per_worker = sent * element_bytes;
  const double shard_ingress = static_cast<double>(workers) * largest * element_bytes;
  model.largest_shard_ingress = shard_ingress;
  const double worker_ingress = model.per_worker;  // every worker pulls all K parameters back
  if (shard_ingress >= worker_ingress) {
    model.busiest_node = shard_ingress;
    model.busiest_node_name = PsShardName(largest_shard);
  } else {
    model.busiest_node = worker_ingress;
    model.busiest_node_name = WorkerName(0);
  }
  return model;
}

}  // namespace

ModelBytes PredictBytesPerStep(SyncMode mode, int64_t parameters, int workers, int ps_shards,
                               int element_bytes) {
  if (parameters <= 0 || workers <= 0) return {};
  const auto elements = static_cast<uint64_t>(parameters);
  if (mode == SyncMode::kRing) return PredictRing(elements, workers, element_bytes);
  if (ps_shards <= 0) return {};
  return PredictPs(elements, workers, ps_shards, element_bytes);
}

std::vector<int> WorkerCountsForCurve(int max_workers) {
  std::vector<int> counts;
  for (int step = 0;; ++step) {
    const int n = static_cast<int>(std::lround(2 * std::pow(2.0, step / 8.0)));
    if (n > max_workers) break;
    // Below ~12 the spacing is finer than 1 and rounding repeats counts: keep each once.
    if (counts.empty() || n > counts.back()) counts.push_back(n);
  }
  if (counts.empty() || counts.back() != max_workers) {
    if (max_workers >= 2) counts.push_back(max_workers);
  }
  return counts;
}

}  // namespace ringside::cli
