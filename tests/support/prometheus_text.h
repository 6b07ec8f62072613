// Test support: samples of a Prometheus text exposition, looked up by name and labels.
#ifndef RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_
#define RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringside::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses every sample line (comments and blank lines skipped); INVALID_ARGUMENT names a bad line.
absl::StatusOr<std::vector<Sample>> ParsePrometheusText(const std::string& text);

// GETs http://127.0.0.1:`port`/metrics and parses it; a failed fetch or parse is a test
// failure (gtest ADD_FAILURE, naming the port) and gives no samples.
std::vector<Sample> ScrapeMetrics(int port);

// The value of the one sample named `name` whose labels include all of `labels`; nullopt if none.
std::optional<double> FindSample(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_
