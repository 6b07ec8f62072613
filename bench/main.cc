// ringside-bench: benchmarks (not tests) comparing Ringside's collectives with baselines, each
// ratio measured within one run. `ringside-bench <command> [--flags]`; see --help.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "bench/commands.h"
#include "common/flags/flags_usage.h"

namespace {

using ringside::bench::Command;

// The dispatch table. Add a command here and define its Run*Command in its own file.
constexpr Command kCommands[] = {
    {"ring", "Ringside ring allreduce vs Gloo (allreduce RING, AllreduceRingChunked)", false,
     &ringside::bench::RunRingCommand,
     "elements gloo_timeout_s implementations iters json keep_temp rank_binary segment_bytes sizes "
     "timeout_s warmup workers worlds"},
    {"ps", "sharded parameter server (push-pull steps) vs the ring allreduce, same N and K", false,
     &ringside::bench::RunPsCommand,
     "elements iters json keep_temp ps_binary ps_shards rank_binary segment_bytes shard_counts "
     "sizes timeout_s warmup workers worlds"},
    {"compute", "samples/s of MLP gradients on CPU and CUDA for 4,16,3 and 784,1024,1024,10", false,
     &ringside::bench::RunComputeCommand, "activation batch_size devices min_seconds models seed"},
    {"codec", "encode + error update + decode per element of each gradient codec vs a plain copy",
     false, &ringside::bench::RunCodecCommand,
     "codec_elements codec_seconds codecs seed segment_elements"},
    {"train",
     "samples/s of the whole training step, ring and ps, vs PyTorch DDP over Gloo (if installed)",
     false, &ringside::bench::RunTrainCommand,
     "batch_size data eval_every json keep_temp lr model ps_shards python rows runs seed steps "
     "target_accuracy timeout_s tls torch torch_script workers"},
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
  // `ringside-bench COMMAND --help`: that command's summary and the flags it reads.
  if (argc > 1 && argv[1][0] != '-') {
    for (const Command& command : kCommands) {
      if (std::strcmp(argv[1], command.name) != 0) continue;
      const std::vector<absl::string_view> flags =
          absl::StrSplit(command.flags, ' ', absl::SkipEmpty());
      const std::string command_usage =
          absl::StrCat("usage: ringside-bench ", command.name, " [--flags]\n", command.summary);
      if (ringside::PrintHelpIfAsked(argc, argv, command_usage, std::cout,
                                     [&](const absl::CommandLineFlag& flag) {
                                       return absl::c_linear_search(flags, flag.Name());
                                     })) {
        return 0;
      }
    }
  }
  if (ringside::PrintHelpIfAsked(argc, argv, usage, std::cout)) return 0;
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) {
    std::cerr << "ringside-bench: missing command (ring, ps, compute, codec, train); see --help\n";
    return 1;
  }
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  for (const Command& command : kCommands) {
    if (std::strcmp(command.name, positional[1]) == 0) return command.run(args);
  }
  std::cerr << "ringside-bench: unknown command '" << positional[1]
            << "' (expected ring, ps, compute, codec or train); see --help\n";
  return 1;
}
