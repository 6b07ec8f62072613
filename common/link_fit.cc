#include "common/link_fit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringside {

absl::StatusOr<LinkFit> FitLatencyBandwidth(absl::Span<const MessageTiming> timings) {
  // Weighted by 1/t²: each timing's error is relative (a 4 MiB echo's jitter is microseconds, a
  // 1 KiB echo's whole time is), so unweighted the large messages would decide the intercept
  // and α would be their noise. Centred sums: the sizes span three decades.
  double weight_sum = 0, mean_bytes = 0, mean_seconds = 0;
  for (const MessageTiming& timing : timings) {
    if (!(timing.seconds > 0) || !std::isfinite(timing.seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("a ", timing.bytes, "-byte message took ",
                                                     timing.seconds, " s: not a timing"));
    }
    const double w = 1 / (timing.seconds * timing.seconds);
    weight_sum += w;
    mean_bytes += w * static_cast<double>(timing.bytes);
    mean_seconds += w * timing.seconds;
  }
  if (timings.size() < 2) {
    return absl::InvalidArgumentError("a fit needs messages of at least two sizes");
  }
  mean_bytes /= weight_sum;
  mean_seconds /= weight_sum;
  double covariance = 0;
  double variance = 0;
  for (const MessageTiming& timing : timings) {
    const double w = 1 / (timing.seconds * timing.seconds);
    const double dx = static_cast<double>(timing.bytes) - mean_bytes;
    covariance += w * dx * (timing.seconds - mean_seconds);
    variance += w * dx * dx;
  }
  if (!(variance > 0)) {
    return absl::InvalidArgumentError("a fit needs messages of at least two sizes");
  }
  LinkFit fit;
  fit.seconds_per_byte = covariance / variance;
  if (!(fit.seconds_per_byte > 0)) {
    return absl::InvalidArgumentError(
        "larger messages did not take longer: no bandwidth can be fitted (a link this fast needs "
        "larger messages, or the timings are noise)");
  }
  fit.latency_seconds = std::max(0.0, mean_seconds - fit.seconds_per_byte * mean_bytes);
  return fit;
}

}  // namespace ringside
