// Which parts of the gradient are synchronised together while the backward pass still runs
// (--bucket_bytes, issue 27), as pure functions, as PyTorch DDP's reducer assigns its buckets.
// The backward pass finishes layers last first (GradientOptions::on_layer_ready), and layers are
// contiguous in the flat vector (ModelSpec::layer_range), so a bucket of consecutive layers taken
// from the end is one contiguous range, and the part of the gradient that is final is always a
// suffix [ready_from, K) of it.
//
// A bucket holds whole layers: a layer's gradient becomes final all at once, so pieces of one
// layer would be ready together and only add collectives (each with its own latency) without
// starting anything sooner. The first bucket is small (at most kFirstBucketBytes, DDP's 1 MiB),
// so the first sync starts as soon as the last layer is done; the others take layers while they
// stay within `bucket_bytes`. A layer larger than its bucket's cap is a bucket of its own. Sizes
// count float32 gradient bytes, whatever the wire dtype, so every wire plans alike.
//
// Pure; thread-safe. BucketTracker is thread-compatible (the computing thread's).
#ifndef RINGSIDE_WORKER_GRADIENT_BUCKETS_H_
#define RINGSIDE_WORKER_GRADIENT_BUCKETS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/model_spec.h"
#include "common/ranges.h"

namespace ringside::worker {

// DDP's first bucket: small, so the first sync starts early.
inline constexpr uint64_t kFirstBucketBytes = uint64_t{1} << 20;

struct GradientBucket {
  int first_layer = 0;  // the bucket holds layers [first_layer, last_layer]
  int last_layer = 0;
  ElementRange range;  // their elements in the flat gradient
};

// The buckets of a gradient whose layer l has the elements `layers[l]` (contiguous, ascending,
// from 0), in the order they are synchronised: the last layers first. bucket_bytes == 0: one
// bucket of every layer (no overlap). Every layer is in exactly one bucket; no layers: none.
std::vector<GradientBucket> PlanBuckets(absl::Span<const ElementRange> layers,
                                        uint64_t bucket_bytes);
// The same for a model's layers.
std::vector<GradientBucket> PlanBuckets(const ModelSpec& spec, uint64_t bucket_bytes);

// Follows the backward pass layer by layer and says when a bucket is complete. Layers must come
// as the gradient computers report them, last first (each exactly once); anything else is a
// broken invariant of the computer.
class BucketTracker {
 public:
  explicit BucketTracker(absl::Span<const GradientBucket> buckets) : buckets_(buckets) {}
  // Layer `layer` is final. Returns the index of the bucket it completes, or -1.
  int LayerReady(int layer);
  // Every bucket complete.
  bool done() const { return next_ == buckets_.size(); }

 private:
  absl::Span<const GradientBucket> buckets_;
  size_t next_ = 0;  // the bucket being filled
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_GRADIENT_BUCKETS_H_
