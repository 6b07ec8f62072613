#include "tests/support/parameters.h"

#include <algorithm>
#include <cmath>

namespace ringside::testing {

double MaxRelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double{a[i]} - b[i]));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace ringside::testing
