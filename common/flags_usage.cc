#include "common/flags_usage.h"

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace ringside {

void ConfigureFlagsUsage(absl::string_view usage_message) {
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/");
  };
  config.contains_help_flags = config.contains_helpshort_flags;
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage_message);
}

}  // namespace ringside
