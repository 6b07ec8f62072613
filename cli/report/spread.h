// The statistics behind `ringside compare`'s verdict: a figure's median and spread over repeated
// runs, and a percentile-bootstrap interval for the ratio of two modes' medians. The bootstrap
// resamples whatever it is given: each repeat's figure (--repeats=R, R >= 2) or, with one run
// per mode, the steps of that run. Its random numbers come from a fixed seed, so the same
// samples always give the same interval.
//
// Pure; thread-safe. No errors: an empty sample or a median that is not positive gives an
// interval marked not valid, never a crash.
#ifndef RINGSIDE_CLI_REPORT_SPREAD_H_
#define RINGSIDE_CLI_REPORT_SPREAD_H_

#include <cstdint>
#include <vector>

namespace ringside::cli {

// The median (the mean of the two middle values for an even count); 0 for none.
double Median(std::vector<double> values);

// A figure over repeats: median, smallest and largest; all 0 and count 0 for none.
struct Spread {
  double median = 0, min = 0, max = 0;
  int count = 0;
};
Spread SpreadOf(const std::vector<double>& values);

struct BootstrapOptions {
  double confidence = 0.95;    // of the two-sided interval, in (0, 1)
  int resamples = 2000;        // more is steadier; the interval's cost is linear in it
  uint64_t seed = 0x52494e47;  // "RING": every compare gives the same interval for the same data
};

// median(a) / median(b) and its two-sided percentile-bootstrap interval: each resample draws
// |a| values from `a` and |b| from `b` with replacement, independently; the bounds are the
// (1 - confidence)/2 and (1 + confidence)/2 quantiles of the resampled ratios.
struct RatioInterval {
  bool valid = false;  // false: a sample was empty or a median not positive (no ratio)
  double ratio = 0;    // on the samples as given
  double low = 0, high = 0;
  double confidence = 0;
  int resamples = 0;
  // The interval lies wholly above or below `value` (a valid interval only).
  bool Excludes(double value) const { return valid && (low > value || high < value); }
};
RatioInterval BootstrapRatioOfMedians(const std::vector<double>& a, const std::vector<double>& b,
                                      const BootstrapOptions& options = {});

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_SPREAD_H_
