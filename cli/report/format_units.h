// Human-readable numbers for the compare table and report: bytes in IEC units, durations,
// shares, counts with thousands separators; and HTML/XML text escaping. Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_FORMAT_UNITS_H_
#define RINGSIDE_CLI_REPORT_FORMAT_UNITS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace ringside::cli {

// 784 -> "784 B", 11182140 -> "10.7 MiB": three significant digits, powers of 1024.
std::string HumanBytes(double bytes);
// 0.0123 -> "12.3 ms", 2.5 -> "2.50 s", 4.2e-5 -> "42.0 µs".
std::string HumanSeconds(double seconds);
// 0.4567 -> "45.7%".
std::string Percent(double share);
// 1863690 -> "1,863,690".
std::string WithThousands(int64_t value);
// Losses, rates, differences: 0 -> "0"; 12345.6 -> "12,346" (from 100 up, whole numbers);
// 0.02171 -> "0.0217" (three significant digits); 2.5e-7 -> "2.50e-07" (below 0.001).
std::string ShortNumber(double value);

// Escapes &, <, >, " and ' so `text` is safe in HTML/SVG text and attribute values.
std::string HtmlEscape(absl::string_view text);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_FORMAT_UNITS_H_
