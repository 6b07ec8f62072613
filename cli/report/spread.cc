#include "cli/report/spread.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ringside::cli {
namespace {

// The median of `values`, reordering them (nth_element: linear, no full sort per resample).
double MedianInPlace(std::vector<double>& values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

// One bootstrap resample's median: |from| draws with replacement into `scratch`. mt19937_64's
// output is fixed by the standard, and the index is taken by modulo (its bias at these sizes,
// below 1e-15, is far below the interval's own noise), so the interval is the same on every
// platform; std::uniform_int_distribution is not.
double ResampledMedian(const std::vector<double>& from, std::mt19937_64& rng,
                       std::vector<double>& scratch) {
  scratch.resize(from.size());
  for (double& value : scratch) value = from[rng() % from.size()];
  return MedianInPlace(scratch);
}

// The value at quantile q of sorted `values`, interpolated between neighbours.
double Quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(sorted.size() - 1, below + 1);
  const double weight = at - static_cast<double>(below);
  return sorted[below] * (1 - weight) + sorted[above] * weight;
}

}  // namespace

double Median(std::vector<double> values) { return MedianInPlace(values); }

Spread SpreadOf(const std::vector<double>& values) {
  Spread spread;
  if (values.empty()) return spread;
  spread.median = Median(values);
  spread.min = *std::min_element(values.begin(), values.end());
  spread.max = *std::max_element(values.begin(), values.end());
  spread.count = static_cast<int>(values.size());
  return spread;
}

RatioInterval BootstrapRatioOfMedians(const std::vector<double>& a, const std::vector<double>& b,
                                      const BootstrapOptions& options) {
  RatioInterval interval;
  interval.confidence = options.confidence;
  if (a.empty() || b.empty() || options.resamples < 1 ||
      !(options.confidence > 0 && options.confidence < 1)) {
    return interval;
  }
  const double median_a = Median(a), median_b = Median(b);
  if (!(median_a > 0) || !(median_b > 0) || !std::isfinite(median_a) || !std::isfinite(median_b)) {
    return interval;
  }
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(static_cast<size_t>(options.resamples));
  for (int i = 0; i < options.resamples; ++i) {
    const double resampled_a = ResampledMedian(a, rng, scratch);
    const double resampled_b = ResampledMedian(b, rng, scratch);
    // A resample of a sample that holds zeros can have a zero median: it has no ratio.
    if (resampled_b > 0) ratios.push_back(resampled_a / resampled_b);
  }
  if (ratios.empty()) return interval;
  std::sort(ratios.begin(), ratios.end());
  interval.valid = true;
  interval.ratio = median_a / median_b;
  interval.low = Quantile(ratios, (1 - options.confidence) / 2);
  interval.high = Quantile(ratios, (1 + options.confidence) / 2);
  interval.resamples = options.resamples;
  return interval;
}

}  // namespace ringside::cli
