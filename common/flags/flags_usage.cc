#include "common/flags/flags_usage.h"

#include <algorithm>
#include <vector>

#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

bool IsRingsideFlag(absl::string_view file) { return !absl::StrContains(file, "absl/"); }

bool IsTestOnly(const absl::CommandLineFlag& flag) {
  return absl::StartsWith(flag.Help(), "test only");
}

// Help text wrapped at 100 columns under the flag's name.
void AppendWrapped(std::string& text, absl::string_view help) {
  constexpr size_t kIndent = 6;
  constexpr size_t kWidth = 100 - kIndent;
  while (!help.empty()) {
    size_t cut = help.size();
    if (cut > kWidth) {
      cut = help.rfind(' ', kWidth);
      if (cut == absl::string_view::npos || cut == 0) cut = kWidth;
    }
    absl::StrAppend(&text, std::string(kIndent, ' '), help.substr(0, cut), "\n");
    help.remove_prefix(cut);
    while (!help.empty() && help.front() == ' ') help.remove_prefix(1);
  }
}

}  // namespace

void ConfigureFlagsUsage(absl::string_view usage_message) {
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = [](absl::string_view file) { return IsRingsideFlag(file); };
  config.contains_help_flags = config.contains_helpshort_flags;
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage_message);
}

std::string FlagsHelp(const FlagFilter& shown, bool include_test_only) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsRingsideFlag(flag->Filename())) continue;
    if (IsTestOnly(*flag) && !include_test_only) continue;
    if (shown && !shown(*flag)) continue;
    flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string text;
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&text, "  --", flag->Name(), "=", value.empty() ? "\"\"" : value, "\n");
    AppendWrapped(text, flag->Help());
  }
  return text;
}

bool PrintHelpIfAsked(int argc, char* const argv[], absl::string_view usage, std::ostream& out,
                      const FlagFilter& shown) {
  bool help = false;
  bool full = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    help |= arg == "--help" || arg == "-help" || arg == "--helpshort" || arg == "-h";
    full |= arg == "--helpfull" || arg == "-helpfull";
  }
  if (!help && !full) return false;
  out << usage << "\n\nFlags" << (full ? " (all of this binary's)" : "") << ":\n"
      << FlagsHelp(full ? FlagFilter() : shown, full);
  out.flush();
  return true;
}

}  // namespace ringside
