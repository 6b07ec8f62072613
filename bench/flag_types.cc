#include "bench/flag_types.h"

#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace ringside::bench {
namespace {

struct Unit {
  absl::string_view suffix;
  int64_t factor;
};
// Longest suffixes first so "KiB" is not read as "B".
constexpr Unit kUnits[] = {{"KiB", int64_t{1} << 10},
                           {"MiB", int64_t{1} << 20},
                           {"GiB", int64_t{1} << 30},
                           {"KB", 1000},
                           {"MB", 1000 * 1000},
                           {"GB", 1000 * 1000 * 1000},
                           {"B", 1}};

}  // namespace

bool ParseByteSize(absl::string_view text, int64_t* bytes, std::string* error) {
  text = absl::StripAsciiWhitespace(text);
  int64_t factor = 1;
  absl::string_view number = text;
  for (const Unit& unit : kUnits) {
    if (absl::EndsWith(text, unit.suffix)) {
      factor = unit.factor;
      number = absl::StripAsciiWhitespace(text.substr(0, text.size() - unit.suffix.size()));
      break;
    }
  }
  int64_t count = 0;
  if (!absl::SimpleAtoi(number, &count) || count <= 0 ||
      count > std::numeric_limits<int64_t>::max() / factor) {
    *error = absl::StrCat("'", text, "' is not a positive size such as 4096, 64KiB or 16MiB");
    return false;
  }
  if ((count * factor) % 4 != 0) {
    *error = absl::StrCat("'", text, "' is not a multiple of 4 bytes (float32 elements)");
    return false;
  }
  *bytes = count * factor;
  return true;
}

std::string FormatByteSize(int64_t bytes) {
  if (bytes > 0 && bytes % (int64_t{1} << 30) == 0) return absl::StrCat(bytes >> 30, "GiB");
  if (bytes > 0 && bytes % (int64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, "MiB");
  if (bytes > 0 && bytes % (int64_t{1} << 10) == 0) return absl::StrCat(bytes >> 10, "KiB");
  return absl::StrCat(bytes, "B");
}

bool AbslParseFlag(absl::string_view text, ByteSizeList* out, std::string* error) {
  ByteSizeList parsed;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int64_t bytes = 0;
    if (!ParseByteSize(part, &bytes, error)) return false;
    parsed.bytes.push_back(bytes);
  }
  if (parsed.bytes.empty()) {
    *error = "expected a comma-separated list of sizes such as 1MiB,16MiB";
    return false;
  }
  *out = std::move(parsed);
  return true;
}

std::string AbslUnparseFlag(const ByteSizeList& sizes) {
  return absl::StrJoin(sizes.bytes, ",",
                       [](std::string* out, int64_t bytes) { out->append(FormatByteSize(bytes)); });
}

bool AbslParseFlag(absl::string_view text, IntList* out, std::string* error) {
  IntList parsed;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int value = 0;
    if (!absl::SimpleAtoi(part, &value) || value <= 0) {
      *error = absl::StrCat("'", part, "' is not a positive integer");
      return false;
    }
    parsed.values.push_back(value);
  }
  if (parsed.values.empty()) {
    *error = "expected a comma-separated list of positive integers such as 2,4";
    return false;
  }
  *out = std::move(parsed);
  return true;
}

std::string AbslUnparseFlag(const IntList& list) { return absl::StrJoin(list.values, ","); }

}  // namespace ringside::bench
