#include "common/net.h"

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
