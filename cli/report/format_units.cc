#include "cli/report/format_units.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ringside::cli {
namespace {

// Three significant digits whatever the magnitude in [1, 1024): "1.23", "12.3", "123", "1000".
std::string ThreeDigits(double value) {
  if (value >= 100) return absl::StrFormat("%.0f", value);
  if (value >= 10) return absl::StrFormat("%.1f", value);
  return absl::StrFormat("%.2f", value);
}

}  // namespace

std::string HumanBytes(double bytes) {
  if (!std::isfinite(bytes)) return "n/a";
  const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const double magnitude = std::fabs(bytes);
  if (magnitude < 1024) {
    // Whole bytes stay whole ("784 B"); a mean over steps may not be.
    return std::round(bytes) == bytes ? absl::StrFormat("%.0f B", bytes)
                                      : absl::StrFormat("%.1f B", bytes);
  }
  int unit = 0;
  double scaled = magnitude;
  while (scaled >= 1024 && unit < 5) {
    scaled /= 1024;
    ++unit;
  }
  // Rounding 1023.7 KiB to three digits prints "1024 KiB"; say "1.00 MiB" instead.
  if (scaled >= 1023.5 && unit < 5) {
    scaled /= 1024;
    ++unit;
  }
  return absl::StrCat(bytes < 0 ? "-" : "", ThreeDigits(scaled), " ", kUnits[unit]);
}

std::string HumanSeconds(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  if (seconds == 0) return "0 s";
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1) return absl::StrCat(ThreeDigits(seconds), " s");
  if (magnitude >= 1e-3) return absl::StrCat(ThreeDigits(seconds * 1e3), " ms");
  return absl::StrCat(ThreeDigits(seconds * 1e6), " \u00b5s");
}

std::string Percent(double share) {
  if (!std::isfinite(share)) return "n/a";
  return absl::StrFormat("%.1f%%", share * 100);
}

std::string WithThousands(int64_t value) {
  // Unsigned negation is defined for every value, INT64_MIN included.
  const uint64_t magnitude =
      value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const std::string digits = absl::StrCat(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string ShortNumber(double value) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 && magnitude < 9.2e18) {
    return WithThousands(static_cast<int64_t>(std::llround(value)));
  }
  if (magnitude >= 1e-3 && magnitude < 100) return absl::StrFormat("%.3g", value);
  return absl::StrFormat("%.2e", value);
}

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ringside::cli
