#include "worker/gradient_buckets.h"

#include <algorithm>
#include <cassert>

namespace ringside::worker {

std::vector<GradientBucket> PlanBuckets(absl::Span<const ElementRange> layers,
                                        uint64_t bucket_bytes) {
  std::vector<GradientBucket> buckets;
  const int count = static_cast<int>(layers.size());
  int l = count - 1;
  while (l >= 0) {
    // 0: everything in one bucket. The first bucket is DDP's small one.
    const uint64_t cap = bucket_bytes == 0 ? UINT64_MAX
                         : buckets.empty() ? std::min(bucket_bytes, kFirstBucketBytes)
                                           : bucket_bytes;
    GradientBucket bucket{l, l, layers[l]};
    uint64_t bytes = layers[l].size() * sizeof(float);
    for (--l; l >= 0; --l) {
      const uint64_t more = layers[l].size() * sizeof(float);
      if (more > cap || bytes > cap - more) break;
      bytes += more;
      bucket.first_layer = l;
      bucket.range.begin = layers[l].begin;
    }
    buckets.push_back(bucket);
  }
  return buckets;
}

std::vector<GradientBucket> PlanBuckets(const ModelSpec& spec, uint64_t bucket_bytes) {
  std::vector<ElementRange> layers;
  for (int l = 0; l < spec.num_weight_layers(); ++l) layers.push_back(spec.layer_range(l));
  return PlanBuckets(layers, bucket_bytes);
}

int BucketTracker::LayerReady(int layer) {
  // The gradient computers report every layer once, last first (gradient_computer.h).
  assert(next_ < buckets_.size() && layer <= buckets_[next_].last_layer &&
         layer >= buckets_[next_].first_layer);
  if (next_ >= buckets_.size()) return -1;
  if (layer != buckets_[next_].first_layer) return -1;
  return static_cast<int>(next_++);
}

}  // namespace ringside::worker
