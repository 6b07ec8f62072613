#include "common/error_feedback.h"

#include <algorithm>
#include <cassert>

namespace ringside {

void ErrorFeedback::Encode(const GradientCodec& codec, const SegmentKey& key, size_t at,
                           absl::Span<const float> gradient, char* wire) {
  assert(at <= residual_.size() && gradient.size() <= residual_.size() - at);
  const absl::Span<float> segment = absl::MakeSpan(residual_).subspan(at, gradient.size());
  for (size_t i = 0; i < gradient.size(); ++i) segment[i] += gradient[i];
  codec.Encode(key, segment, wire);
}

void ErrorFeedback::Reset() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

}  // namespace ringside
