#include "common/error_feedback.h"

#include <algorithm>
#include <cassert>

namespace ringside {

void ErrorFeedback::Encode(const GradientCodec& codec, const SegmentKey& key, size_t at,
                           absl::Span<const float> gradient, char* wire) {
  Add(at, gradient);
  codec.Encode(key, absl::MakeSpan(residual_.data() + at, gradient.size()), wire);
}

void ErrorFeedback::Add(size_t at, absl::Span<const float> gradient) {
  assert(at <= residual_.size() && gradient.size() <= residual_.size() - at);
  // Raw pointers: Debian's Abseil is built hardened, so every Span::operator[] checks its
  // bound, and a checked loop is not vectorised.
  float* residual = residual_.data() + at;
  const float* added = gradient.data();
  for (size_t i = 0; i < gradient.size(); ++i) residual[i] += added[i];
}

void ErrorFeedback::Reset() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

}  // namespace ringside
