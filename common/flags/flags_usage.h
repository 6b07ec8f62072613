// --help for Ringside binaries. Abseil 20220623 lists only flags defined in the file named after
// the binary, shows one usage for every subcommand, and exits 1 after --help, which a script
// reads as a failure. Ringside prints help itself before parsing: the usage, then the flags the
// binary (or its subcommand) takes with their defaults, and the caller exits 0.
//   --help      the usage and the flags `shown` selects (every Ringside flag when unset)
//   --helpfull  every Ringside flag of the binary, whatever the subcommand (what the docs check
//               compares command lines against)
// Flags whose help starts with "test only" are listed by --helpfull only.
#ifndef RINGSIDE_COMMON_FLAGS_FLAGS_USAGE_H_
#define RINGSIDE_COMMON_FLAGS_FLAGS_USAGE_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/flags/commandlineflag.h"
#include "absl/strings/string_view.h"

namespace ringside {

// Selects the flags --help lists: given a flag, whether it belongs to the command asked about.
using FlagFilter = std::function<bool(const absl::CommandLineFlag&)>;

// Call before absl::ParseCommandLine: what absl prints for a bad flag.
void ConfigureFlagsUsage(absl::string_view usage_message);

// Whether argv asks for help (--help, -help, --helpfull, --helpshort, -h); if so prints the
// usage and the flags to `out` and returns true: the caller exits 0.
bool PrintHelpIfAsked(int argc, char* const argv[], absl::string_view usage, std::ostream& out,
                      const FlagFilter& shown = {});

// The flags `shown` selects (every Ringside flag when unset, test-only ones too when
// `include_test_only`), sorted by name, one block each: "  --name=DEFAULT  help".
std::string FlagsHelp(const FlagFilter& shown, bool include_test_only);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_FLAGS_USAGE_H_
