// Test support: /metrics scraped as a test step (launch/prometheus_text.h does the work).
#ifndef RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_
#define RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_

#include <vector>

#include "launch/http_get.h"
#include "launch/prometheus_text.h"

namespace ringside::testing {

using ::ringside::launch::FindSample;
using ::ringside::launch::HttpGet;
using ::ringside::launch::ParsePrometheusText;
using ::ringside::launch::Sample;

// FetchMetrics(port); a failed fetch or parse is a test failure (gtest ADD_FAILURE, naming the
// port) and gives no samples.
std::vector<launch::Sample> ScrapeMetrics(int port);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_PROMETHEUS_TEXT_H_
