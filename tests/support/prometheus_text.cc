#include "tests/support/prometheus_text.h"

#include "gtest/gtest.h"

namespace ringside::testing {

std::vector<launch::Sample> ScrapeMetrics(int port) {
  absl::StatusOr<std::vector<launch::Sample>> samples = launch::FetchMetrics(port);
  if (!samples.ok()) {
    ADD_FAILURE() << "scraping metrics on port " << port << ": " << samples.status();
    return {};
  }
  return *std::move(samples);
}

}  // namespace ringside::testing
