#include "launch/prometheus_text.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "launch/http_get.h"

namespace ringside::launch {

absl::StatusOr<std::vector<Sample>> ParsePrometheusText(const std::string& text) {
  std::vector<Sample> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("no value in line: ", line));
    }
    if (brace != absl::string_view::npos && brace < space) {
      sample.name = std::string(line.substr(0, brace));
      const size_t close = line.rfind('}');
      // Our label values never contain '"' or ',' (node names, modes, phases).
      for (absl::string_view pair :
           absl::StrSplit(line.substr(brace + 1, close - brace - 1), ',', absl::SkipEmpty())) {
        std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
        sample.labels[kv.first] =
            std::string(absl::StripSuffix(absl::StripPrefix(kv.second, "\""), "\""));
      }
    } else {
      sample.name = std::string(line.substr(0, space));
    }
    const std::string value(line.substr(space + 1));
    char* end = nullptr;
    sample.value = std::strtod(value.c_str(), &end);  // accepts +Inf, NaN
    if (end == value.c_str()) {
      return absl::InvalidArgumentError(absl::StrCat("bad value in line: ", line));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

absl::StatusOr<std::vector<Sample>> FetchMetrics(int port) {
  return FetchMetrics("127.0.0.1", port);
}

absl::StatusOr<std::vector<Sample>> FetchMetrics(const std::string& host, int port) {
  absl::StatusOr<std::string> text = HttpGet(host, port, "/metrics");
  if (!text.ok()) return text.status();
  return ParsePrometheusText(*text);
}

namespace {

bool Matches(const Sample& sample, const std::string& name,
             const std::map<std::string, std::string>& labels) {
  if (sample.name != name) return false;
  for (const auto& [key, value] : labels) {
    auto it = sample.labels.find(key);
    if (it == sample.labels.end() || it->second != value) return false;
  }
  return true;
}

}  // namespace

std::optional<double> FindSample(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels) {
  for (const Sample& sample : samples) {
    if (Matches(sample, name, labels)) return sample.value;
  }
  return std::nullopt;
}

double SumSamples(const std::vector<Sample>& samples, const std::string& name,
                  const std::map<std::string, std::string>& labels) {
  double sum = 0;
  for (const Sample& sample : samples) {
    if (Matches(sample, name, labels)) sum += sample.value;
  }
  return sum;
}

}  // namespace ringside::launch
