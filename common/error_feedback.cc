#include "common/error_feedback.h"

#include <algorithm>
#include <cassert>

namespace ringside {

void ErrorFeedback::Encode(const GradientCodec& codec, const SegmentKey& key, size_t at,
                           absl::Span<const float> gradient, char* wire) {
  assert(at <= residual_.size() && gradient.size() <= residual_.size() - at);
  codec.EncodeAdded(key, gradient, absl::MakeSpan(residual_.data() + at, gradient.size()), wire);
}

void ErrorFeedback::Add(size_t at, absl::Span<const float> gradient) {
  assert(at <= residual_.size() && gradient.size() <= residual_.size() - at);
  AddInto(gradient, absl::MakeSpan(residual_.data() + at, gradient.size()));
}

void ErrorFeedback::Reset() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

}  // namespace ringside
