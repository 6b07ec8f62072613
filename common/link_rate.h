// A link's speed as tc(8) writes it (`100mbit`, `1gbit`, `12500kbps`, `20mibit`): what
// `ringside lab --link_rate` takes, what the lab's tbf qdiscs are given (the text as typed) and
// what the cost model's time bound (common/cost_model.h, SyncBoundSeconds) divides by.
//
// Units, as tc-rate(8): `bit` or a bare number (bits/s), `kbit`, `mbit`, `gbit`, `tbit`
// (powers of 1000), `kibit`, `mibit`, `gibit`, `tibit` (powers of 1024), and the same with
// `bps` instead of `bit` for bytes/s. Case-insensitive. Pure; thread-safe. Errors:
// INVALID_ARGUMENT naming the text and the accepted forms.
#ifndef RINGSIDE_COMMON_LINK_RATE_H_
#define RINGSIDE_COMMON_LINK_RATE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside {

// What of a link's bytes a TCP stream's payload gets over Ethernet with an MTU of 1500, while the
// other direction carries data too: each 1448-byte segment (with TCP timestamps) is a 1514-byte
// frame, and half a 66-byte acknowledgement of the other direction's data shares its way.
inline constexpr double kTcpPayloadShare = 1448.0 / (1514.0 + 33.0);

struct LinkRate {
  std::string text;            // as typed, for tc and for messages ("100mbit")
  double bits_per_second = 0;  // > 0
  double bytes_per_second() const { return bits_per_second / 8; }
  // The payload's share of it (kTcpPayloadShare): what a step model divides payload bytes by.
  double payload_bytes_per_second() const { return bytes_per_second() * kTcpPayloadShare; }
};

absl::StatusOr<LinkRate> ParseLinkRate(absl::string_view text);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_LINK_RATE_H_
