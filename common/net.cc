#include "common/net.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ringside {

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", text, "' is not HOST:PORT (for example 127.0.0.1:7000)"));
  }
  absl::string_view host = text.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
    return absl::InvalidArgumentError(absl::StrCat("address '", text, "' has an unclosed '['"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", text, "' has no valid port (0..65535)"));
  }
  return HostPort{std::string(host), port};
}

std::string QuoteForLog(absl::string_view peer_text, size_t max_bytes) {
  const bool cut = peer_text.size() > max_bytes;
  std::string quoted = absl::StrCat("\"", absl::CHexEscape(peer_text.substr(0, max_bytes)), "\"");
  if (cut) absl::StrAppend(&quoted, "... (", peer_text.size(), " bytes)");
  return quoted;
}

absl::StatusOr<HostPort> ParseDialAddress(absl::string_view text) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("address ", QuoteForLog(text), " ", why,
                                                   " (expected HOST:PORT, e.g. "
                                                   "10.0.0.5:7000 or [::1]:7000, port 1..65535)"));
  };
  if (text.size() > 255) return refuse("is too long");
  for (char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        !absl::ascii_isprint(static_cast<unsigned char>(c))) {
      return refuse("has whitespace or control characters");
    }
  }
  absl::StatusOr<HostPort> parsed = ParseHostPort(text);
  if (!parsed.ok()) return refuse("is not HOST:PORT");
  if (parsed->port < 1) return refuse("has port 0, which cannot be dialled");
  const std::string& host = parsed->host;
  const bool bracketed = text.front() == '[';
  const absl::string_view allowed = bracketed ? "0123456789abcdefABCDEF:." : "";
  for (char c : host) {
    const bool ok =
        bracketed ? allowed.find(c) != absl::string_view::npos
                  : absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    if (!ok) return refuse("has a host that is neither a name nor an IP address");
  }
  if (host.empty() || host.front() == '-' || host.front() == '.') {
    return refuse("has a host that is neither a name nor an IP address");
  }
  return parsed;
}

absl::StatusOr<std::vector<HostPort>> ParseHostPortList(absl::string_view text) {
  std::vector<HostPort> result;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    auto address = ParseHostPort(part);
    if (!address.ok()) return address.status();
    result.push_back(*std::move(address));
  }
  if (result.empty()) {
    return absl::InvalidArgumentError("address list is empty (expected HOST:PORT,HOST:PORT,...)");
  }
  return result;
}

}  // namespace ringside
