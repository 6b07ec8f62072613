// Samples of a Prometheus text exposition (what every Ringside process serves at /metrics),
// fetched over HTTP and looked up by name and labels: for `ringside compare` and the tests.
// Errors: INVALID_ARGUMENT names a bad line; fetch errors as launch/http_get.h.
#ifndef RINGSIDE_LAUNCH_PROMETHEUS_TEXT_H_
#define RINGSIDE_LAUNCH_PROMETHEUS_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringside::launch {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses every sample line (comments and blank lines skipped).
absl::StatusOr<std::vector<Sample>> ParsePrometheusText(const std::string& text);
// GETs http://127.0.0.1:`port`/metrics and parses it.
absl::StatusOr<std::vector<Sample>> FetchMetrics(int port);
// GETs http://`host`:`port`/metrics (host: an IPv4 address, e.g. a lab host's) and parses it.
absl::StatusOr<std::vector<Sample>> FetchMetrics(const std::string& host, int port);
// The value of the first sample named `name` whose labels include all of `labels`.
std::optional<double> FindSample(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels);

// The sum of every sample named `name` whose labels include all of `labels` (0 if none): a
// counter across the label values not given, e.g. every link a node sends on.
double SumSamples(const std::vector<Sample>& samples, const std::string& name,
                  const std::map<std::string, std::string>& labels);

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_PROMETHEUS_TEXT_H_
