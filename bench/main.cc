// ringside-bench: benchmarks (not tests) comparing Ringside's collectives with baselines, each
// ratio measured within one run. `ringside-bench <command> [--flags]`; see --help.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/commands.h"
#include "common/flags/flags_usage.h"

namespace {

using ringside::bench::Command;

// The dispatch table. Add a command here and define its Run*Command in its own file.
constexpr Command kCommands[] = {
    {"ring", "Ringside ring allreduce vs Gloo (allreduce RING, AllreduceRingChunked)", false,
     &ringside::bench::RunRingCommand},
    {"ps", "sharded parameter server (push-pull steps) vs the ring allreduce, same N and K", false,
     &ringside::bench::RunPsCommand},
    {"compute", "samples/s of MLP gradients on CPU and CUDA for 4,16,3 and 784,1024,1024,10", false,
     &ringside::bench::RunComputeCommand},
    {"train",
     "samples/s of the whole training step, ring and ps, vs PyTorch DDP over Gloo (if installed)",
     false, &ringside::bench::RunTrainCommand},
    {"gloo-rank", "one Gloo rank process (started by `ring`)", true,
     &ringside::bench::RunGlooRankCommand},
    {"ring-rank", "one Ringside ring rank process (started by `ring` and `ps`)", true,
     &ringside::bench::RunRingRankCommand},
    {"ps-rank", "one Ringside parameter-server client rank (started by `ps`)", true,
     &ringside::bench::RunPsRankCommand},
};

std::string UsageMessage() {
  std::string usage = "usage: ringside-bench <command> [--flags]\n\nCommands:\n";
  for (const Command& command : kCommands) {
    if (!command.hidden) absl::StrAppend(&usage, "  ", command.name, "\t", command.summary, "\n");
  }
  absl::StrAppend(&usage,
                  "\nExample: ringside-bench ring --worlds=2,4 --sizes=1MiB,16MiB --json=out.json");
  return usage;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = UsageMessage();
  ringside::ConfigureFlagsUsage(usage);
  if (ringside::PrintHelpIfAsked(argc, argv, usage, std::cout)) return 0;
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) {
    std::cerr << "ringside-bench: missing command (ring, ps, compute, train); see --help\n";
    return 1;
  }
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  for (const Command& command : kCommands) {
    if (std::strcmp(command.name, positional[1]) == 0) return command.run(args);
  }
  std::cerr << "ringside-bench: unknown command '" << positional[1]
            << "' (expected ring, ps, compute or train); see --help\n";
  return 1;
}
