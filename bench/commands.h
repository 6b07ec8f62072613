// The benchmark's subcommands: `ringside-bench <command> [--flags]`. main.cc holds the dispatch
// table; each command lives in its own <name>_command.cc with its own flags (shared flags are in
// bench_flags.h). A command gets the positional arguments after its name (usually none), reads
// its flags, runs, and returns the process exit code (0: success; 1: failure, reported on
// stderr in one line per problem).
#ifndef RINGSIDE_BENCH_COMMANDS_H_
#define RINGSIDE_BENCH_COMMANDS_H_

#include <string>
#include <vector>

namespace ringside::bench {

struct Command {
  const char* name;
  const char* summary;  // one line for --help
  bool hidden;          // internal (e.g. re-executed rank processes): not listed in --help
  int (*run)(const std::vector<std::string>& args);
  // The flags it reads, space-separated: what `ringside-bench <command> --help` lists.
  const char* flags = "";
};

// ring: Ringside's ring allreduce vs Gloo's, over worker processes on loopback.
int RunRingCommand(const std::vector<std::string>& args);
// ps: push-pull steps against sharded parameter servers vs the ring, over processes on loopback.
int RunPsCommand(const std::vector<std::string>& args);
// compute: samples/second of MLP gradient computation on CPU and (where present) CUDA.
int RunComputeCommand(const std::vector<std::string>& args);
// codec: the gradient codecs' encode + error update + decode per element beside a plain copy.
int RunCodecCommand(const std::vector<std::string>& args);
// train: samples/s of the whole training loop, both modes, beside PyTorch DDP when installed.
int RunTrainCommand(const std::vector<std::string>& args);
// gloo-rank (hidden): one Gloo rank process, started by `ring`.
int RunGlooRankCommand(const std::vector<std::string>& args);
// ring-rank, ps-rank (hidden): one of Ringside's ranks, started by `ring` and `ps`.
int RunRingRankCommand(const std::vector<std::string>& args);
int RunPsRankCommand(const std::vector<std::string>& args);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_COMMANDS_H_
