// The command line as Abseil reads it, for what its parsing does not keep: whether a flag was
// given at all (a default and a given value look alike afterwards), and every value of a flag
// given more than once (Abseil keeps only the last). A flag is `--name` or `-name`, with its
// value attached (`--name=V`) or as the next argument (`--name V`); `--` ends the flags.
#ifndef RINGSIDE_COMMON_FLAGS_COMMAND_LINE_H_
#define RINGSIDE_COMMON_FLAGS_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ringside {

// Whether argv gives the flag `name` (without its dashes).
bool FlagGiven(int argc, char* const argv[], absl::string_view name);

// Every value argv gives the flag `name`, in order.
std::vector<std::string> RepeatedFlagValues(int argc, char* const argv[], absl::string_view name);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_COMMAND_LINE_H_
