#include "common/gradient_codec.h"

#include <algorithm>

#include "common/status_macros.h"

namespace ringside {

absl::Status GradientCodec::DecodeAdd(const SegmentKey& key, absl::string_view wire,
                                      absl::Span<float> sum) const {
  RETURN_IF_ERROR(Check(key, wire, sum.size()));
  AddChecked(key, wire, sum);
  return absl::OkStatus();
}

absl::Status GradientCodec::Decode(const SegmentKey& key, absl::string_view wire,
                                   absl::Span<float> out) const {
  RETURN_IF_ERROR(Check(key, wire, out.size()));
  std::fill(out.begin(), out.end(), 0.0f);
  AddChecked(key, wire, out);
  return absl::OkStatus();
}

}  // namespace ringside
