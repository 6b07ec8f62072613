#include "common/flags/command_line.h"

#include <optional>

#include "absl/strings/strip.h"

namespace ringside {
namespace {

struct FlagArgument {
  absl::string_view name;
  std::optional<absl::string_view> value;  // attached with '='
};

// `arg` as a flag: its name and attached value; nullopt for a positional argument.
std::optional<FlagArgument> AsFlag(absl::string_view arg) {
  if (!absl::ConsumePrefix(&arg, "-")) return std::nullopt;
  absl::ConsumePrefix(&arg, "-");
  if (arg.empty()) return std::nullopt;
  const size_t equals = arg.find('=');
  if (equals == absl::string_view::npos) return FlagArgument{arg, std::nullopt};
  return FlagArgument{arg.substr(0, equals), arg.substr(equals + 1)};
}

}  // namespace

bool FlagGiven(int argc, char* const argv[], absl::string_view name) {
  for (int i = 1; i < argc; ++i) {
    if (absl::string_view(argv[i]) == "--") break;
    const std::optional<FlagArgument> flag = AsFlag(argv[i]);
    if (flag.has_value() && flag->name == name) return true;
  }
  return false;
}

std::vector<std::string> RepeatedFlagValues(int argc, char* const argv[], absl::string_view name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    if (absl::string_view(argv[i]) == "--") break;
    const std::optional<FlagArgument> flag = AsFlag(argv[i]);
    if (!flag.has_value() || flag->name != name) continue;
    if (flag->value.has_value()) {
      values.emplace_back(*flag->value);
    } else if (i + 1 < argc) {
      values.emplace_back(argv[++i]);
    }
  }
  return values;
}

}  // namespace ringside
