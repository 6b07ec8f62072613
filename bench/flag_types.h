// Value types for the benchmark's list-valued command-line flags, with the Abseil flag hooks
// (AbslParseFlag/AbslUnparseFlag) so a bad value fails at start-up with a one-line error naming
// the flag. Also usable as plain parsers.
//
// Pure functions; thread-safe. Parse errors are reported through absl's `std::string* error`.
#ifndef RINGSIDE_BENCH_FLAG_TYPES_H_
#define RINGSIDE_BENCH_FLAG_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ringside::bench {

// "1MiB,16MiB,64KiB,4096": byte counts, each > 0 and a multiple of 4 (float32 elements).
// Suffixes: B, KiB, MiB, GiB (powers of 1024) and KB, MB, GB (powers of 1000).
struct ByteSizeList {
  std::vector<int64_t> bytes;
};
bool AbslParseFlag(absl::string_view text, ByteSizeList* out, std::string* error);
std::string AbslUnparseFlag(const ByteSizeList& sizes);

// "2,4": positive integers.
struct IntList {
  std::vector<int> values;
};
bool AbslParseFlag(absl::string_view text, IntList* out, std::string* error);
std::string AbslUnparseFlag(const IntList& list);

// One byte count as above; false with `error` set when malformed.
bool ParseByteSize(absl::string_view text, int64_t* bytes, std::string* error);
// 65536 -> "64KiB", 1048576 -> "1MiB", 1000 -> "1000B": the shortest exact binary form.
std::string FormatByteSize(int64_t bytes);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_FLAG_TYPES_H_
