#include "cli/report/model_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/cost_model.h"
#include "common/ranges.h"

namespace ringside::cli {
namespace {

ModelBytes PredictRing(absl::Span<const uint64_t> buckets, int workers, double element_bytes) {
  const BusiestNode busiest = RingBusiestNode(buckets, workers);
  ModelBytes model;
  model.per_worker = RingElementsSentByRank(buckets, workers, 0) * element_bytes;
  model.busiest_node = busiest.elements * element_bytes;
  model.busiest_node_name = busiest.name;
  return model;
}

ModelBytes PredictPs(uint64_t elements, int workers, int shards, double element_bytes) {
  const BusiestNode busiest = PsBusiestNode(elements, workers, shards);
  ModelBytes model;
  model.per_worker = elements * element_bytes;  // every range once: K elements
  model.busiest_node = busiest.elements * element_bytes;
  model.busiest_node_name = busiest.name;
  model.largest_shard_ingress = PsLargestShardIngress(elements, workers, shards) * element_bytes;
  return model;
}

}  // namespace

ModelBytes PredictBytesPerStep(SyncMode mode, int64_t parameters, int workers, int ps_shards,
                               int element_bytes, absl::Span<const uint64_t> ring_buckets) {
  if (parameters <= 0 || workers <= 0) return {};
  const auto elements = static_cast<uint64_t>(parameters);
  if (mode == SyncMode::kRing) {
    return PredictRing(ring_buckets.empty() ? absl::MakeConstSpan(&elements, 1) : ring_buckets,
                       workers, element_bytes);
  }
  if (ps_shards <= 0) return {};
  return PredictPs(elements, workers, ps_shards, element_bytes);
}

MemoryBound PredictMemoryBound(int64_t parameters, int ps_shards, OptimizerKind optimizer) {
  const int64_t elements = std::max<int64_t>(0, parameters);
  // Optimizer::StateSize counts a step counter besides the moments: the moments alone here.
  const int64_t moments =
      static_cast<int64_t>(Optimizer::StateSize(optimizer, static_cast<size_t>(elements))) - 1;
  constexpr int64_t kFloat = sizeof(float);
  MemoryBound bound;
  bound.worker_bytes = (2 * elements + moments) * kFloat + kMemoryAllowanceBytes;
  if (ps_shards >= 1) {
    const int64_t range =
        static_cast<int64_t>(EvenRanges(static_cast<uint64_t>(elements), ps_shards).front().size());
    const int64_t range_moments = elements > 0 ? moments / elements * range : 0;
    bound.shard_bytes = (range + range_moments) * kFloat + kMemoryAllowanceBytes;
  }
  return bound;
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
