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

// An address another process sent to be dialled (a member registering): stricter than
// ParseHostPort. No whitespace anywhere, at most 255 bytes, a host name (letters, digits, '-',
// '.') or an IP literal ("[::1]" for IPv6), and a port in 1..65535. INVALID_ARGUMENT quoting the
// text (escaped and truncated: it came from a peer) otherwise.
absl::StatusOr<HostPort> ParseDialAddress(absl::string_view text);

// Text a peer sent, fit for a log line or an error message: in quotes, control characters and
// non-ASCII escaped (so a newline cannot forge a log line), cut after `max_bytes` with the
// original length said.
std::string QuoteForLog(absl::string_view peer_text, size_t max_bytes = 100);

// "a:1,b:2" -> two addresses; an empty list is an error.
absl::StatusOr<std::vector<HostPort>> ParseHostPortList(absl::string_view text);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_NET_H_
