// A plain HTTP/1.0 GET over loopback or to a local IPv4 address such as a lab host's (enough to
// scrape /metrics), with a deadline.
#ifndef RINGSIDE_LAUNCH_HTTP_GET_H_
#define RINGSIDE_LAUNCH_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ringside::launch {

// The body of http://127.0.0.1:`port``path`, or an error for a refused connection, a timeout or a
// status other than 200.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));
// The same from http://`host`:`port``path`; `host` is an IPv4 address (INVALID_ARGUMENT if not).
absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_HTTP_GET_H_
