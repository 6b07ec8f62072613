// Parsing of HOST:PORT addresses and comma-separated address lists given on command lines.
// Pure functions; thread-safe. Errors are INVALID_ARGUMENT naming the bad entry.
#ifndef RINGSIDE_COMMON_NET_H_
#define RINGSIDE_COMMON_NET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside {

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;  // "host:port", brackets around IPv6 hosts
};

// "127.0.0.1:5000", "worker-0.svc:5000", "[::1]:5000". Port 0 is allowed (bind any free port).
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// "a:1,b:2" -> two addresses; an empty list is an error.
absl::StatusOr<std::vector<HostPort>> ParseHostPortList(absl::string_view text);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_NET_H_
