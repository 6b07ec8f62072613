// A link's latency α and inverse bandwidth β fitted from timed messages: t(m) = α + β·m, by
// least squares over the message sizes the probe sends (1 KiB to 4 MiB), each timing weighted
// by 1/t² (its error taken as relative, so the small messages set α). Pure;
// thread-safe. Errors: INVALID_ARGUMENT when the timings cannot give a rate (fewer than two sizes,
// a time that is not finite and positive, a slope that is not positive).
#ifndef RINGSIDE_COMMON_LINK_FIT_H_
#define RINGSIDE_COMMON_LINK_FIT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ringside {

struct MessageTiming {
  uint64_t bytes = 0;  // the message's payload
  double seconds = 0;  // one way: half a round trip of an echo
};

struct LinkFit {
  double latency_seconds = 0;   // α, the intercept; a negative fit (noise) is taken as 0
  double seconds_per_byte = 0;  // β, the slope, > 0
  double bytes_per_second() const { return 1 / seconds_per_byte; }
};

absl::StatusOr<LinkFit> FitLatencyBandwidth(absl::Span<const MessageTiming> timings);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_LINK_FIT_H_
