// fp16's share divisor on the parameter server, in one place (common/wire_dtype.h
// WireShareDivisor: the generation's worker count for fp16, 1 for fp32 and bf16). A worker
// divides its share by it before the push (PsClient::PrepareShare), and the sum as the replies
// carry it is multiplied back by it before an optimiser takes it, on the worker (PsClient) and on
// the shard for its own copy (ShardState) alike, so both step with the same values. A factor of
// 1 does nothing (fp32's bits are untouched). Thread-compatible; a value type.
#ifndef RINGSIDE_SERVER_PS_WIRE_SHARE_H_
#define RINGSIDE_SERVER_PS_WIRE_SHARE_H_

#include <vector>

#include "absl/types/span.h"
#include "common/wire_dtype.h"

namespace ringside::server {

class WireShareScale {
 public:
  WireShareScale(WireDtype dtype, int workers) : factor_(WireShareDivisor(dtype, workers)) {}

  // A worker's share (or a part of it) before it is pushed, in place.
  void ScaleShare(absl::Span<float> share) const { DivideShare(share, factor_); }
  // The sum as the replies carry it, back to the summed gradient, in place.
  void UnscaleSum(absl::Span<float> sum) const { MultiplySum(sum, factor_); }
  // The same for a sum that must stay as the replies carry it (the shard's): `sum` itself when
  // the factor is 1, else its copy in `scratch`, multiplied back.
  absl::Span<const float> UnscaledSum(absl::Span<const float> sum,
                                      std::vector<float>& scratch) const {
    if (factor_ == 1.0f) return sum;
    scratch.assign(sum.begin(), sum.end());
    MultiplySum(absl::MakeSpan(scratch), factor_);
    return scratch;
  }

 private:
  float factor_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_WIRE_SHARE_H_
