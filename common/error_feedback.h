// Error feedback (Seide et al. 2014; Karimireddy et al. 2019): what a lossy codec did not send
// of a gradient is kept, and added to the next step's before it is encoded, so nothing is lost,
// only delayed. One residual per owner of a buffer: each worker over its whole gradient, each
// shard over its range (for the sum it compresses into its reply). A policy beside the codecs:
// any GradientCodec is used through it, none keeps a residual of its own.
//
// When the residuals are reset (a regroup, a mode switch, a lost member, a checkpoint loaded) is
// the owner's rule, documented in docs/architecture.md ("Gradient compression").
//
// Not thread-safe: one owner thread (the sync) at a time; distinct segments of one residual
// may be encoded from distinct threads, as they touch disjoint elements.
#ifndef RINGSIDE_COMMON_ERROR_FEEDBACK_H_
#define RINGSIDE_COMMON_ERROR_FEEDBACK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/gradient_codec.h"

namespace ringside {

class ErrorFeedback {
 public:
  // A residual of `elements` zeros.
  explicit ErrorFeedback(size_t elements) : residual_(elements, 0.0f) {}

  // Adds `gradient` to the residual's elements [at, at + gradient.size()), encodes that sum with
  // `codec` into `wire` (codec.EncodedBytes(gradient.size()) bytes) and keeps what the wire does
  // not carry as the residual (GradientCodec::EncodeAdded: the add folded into the codec's first
  // pass where its kind allows). The segment must lie within the residual (a broken invariant
  // otherwise).
  void Encode(const GradientCodec& codec, const SegmentKey& key, size_t at,
              absl::Span<const float> gradient, char* wire);

  // Adds `gradient` to the residual's elements [at, at + gradient.size()): the pass every codec
  // under error feedback makes, alone or folded into its own, the least any of them costs
  // (`ringside-bench codec` times it beside a copy). The segment must lie within the residual.
  void Add(size_t at, absl::Span<const float> gradient);

  // Every residual element zero again (the documented reset points).
  void Reset();

  size_t size() const { return residual_.size(); }
  absl::Span<const float> residual() const { return residual_; }

 private:
  std::vector<float> residual_;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_ERROR_FEEDBACK_H_
