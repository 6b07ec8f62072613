// The median of a sample, for the figures measured more than once (benchmarks' ranks, the
// probe's echoes, a member's profile). Pure; thread-safe.
#ifndef RINGSIDE_COMMON_MEDIAN_H_
#define RINGSIDE_COMMON_MEDIAN_H_

#include "absl/types/span.h"

namespace ringside {

// Median of `values` (mean of the middle two for an even count); 0 for an empty span.
double Median(absl::Span<const double> values);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_MEDIAN_H_
