// --help for Ringside binaries: Abseil lists only flags defined in the file named after the
// binary by default; ours live in several files, so every flag outside Abseil itself is listed.
#ifndef RINGSIDE_COMMON_FLAGS_USAGE_H_
#define RINGSIDE_COMMON_FLAGS_USAGE_H_

#include "absl/strings/string_view.h"

namespace ringside {

// Call before absl::ParseCommandLine.
void ConfigureFlagsUsage(absl::string_view usage_message);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_USAGE_H_
