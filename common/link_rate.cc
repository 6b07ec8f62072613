#include "common/link_rate.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

// tc-rate(8)'s suffixes and what one unit is in bits per second. "bit" and "bps" are last so
// that the longer suffixes ending in them are tried first.
constexpr std::pair<const char*, double> kUnits[] = {
    {"kibit", 1024.0},
    {"mibit", 1024.0 * 1024},
    {"gibit", 1024.0 * 1024 * 1024},
    {"tibit", 1024.0 * 1024 * 1024 * 1024},
    {"kibps", 8 * 1024.0},
    {"mibps", 8 * 1024.0 * 1024},
    {"gibps", 8 * 1024.0 * 1024 * 1024},
    {"tibps", 8 * 1024.0 * 1024 * 1024 * 1024},
    {"kbit", 1e3},
    {"mbit", 1e6},
    {"gbit", 1e9},
    {"tbit", 1e12},
    {"kbps", 8e3},
    {"mbps", 8e6},
    {"gbps", 8e9},
    {"tbps", 8e12},
    {"bit", 1},
    {"bps", 8},
};

}  // namespace

absl::StatusOr<LinkRate> ParseLinkRate(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "link rate '", text,
        "' is not a tc rate: a positive number with a unit such as 100mbit, 1gbit, 500kbit, "
        "20mibit or 12500kbps (bit/kbit/mbit/gbit/tbit, the same with bps for bytes, ki/mi/gi/ti "
        "for powers of 1024)"));
  };
  double per_unit = 1;  // a bare number is bits per second
  absl::string_view number = lower;
  for (const auto& [suffix, bits] : kUnits) {
    const absl::string_view s(suffix);
    if (number.size() > s.size() && number.substr(number.size() - s.size()) == s) {
      number.remove_suffix(s.size());
      per_unit = bits;
      break;
    }
  }
  const std::string digits(number);
  if (digits.empty() || !(absl::ascii_isdigit(digits[0]) || digits[0] == '.')) return invalid();
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(value) || value <= 0) {
    return invalid();
  }
  LinkRate rate;
  rate.text = std::string(text);
  rate.bits_per_second = value * per_unit;
  // tc keeps rates as 64-bit bytes per second; below 8 bit/s a shaper cannot be configured.
  if (rate.bits_per_second < 8) return invalid();
  return rate;
}

}  // namespace ringside
