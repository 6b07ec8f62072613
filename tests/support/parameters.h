// Comparing trained parameters with a reference, as every parity test does.
#ifndef RINGSIDE_TESTS_SUPPORT_PARAMETERS_H_
#define RINGSIDE_TESTS_SUPPORT_PARAMETERS_H_

#include <vector>

namespace ringside::testing {

// max |a - b| / max |b| over the common length (max |a - b| when b is all zero).
double MaxRelativeDifference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_PARAMETERS_H_
