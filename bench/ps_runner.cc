#include "bench/ps_runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/rank_processes.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "launch/await_file.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"

namespace ringside::bench {
namespace {

std::string ShardReadyPath(const launch::TempDir& dir, int shard) {
  return dir.File(absl::StrCat("shard-", shard, ".ready.json"));
}
std::string WorkerResultFile(const launch::TempDir& dir, int rank) {
  return dir.File(absl::StrCat("worker-", rank, ".json"));
}

absl::Status CheckExecutable(const std::string& path, absl::string_view name) {
  if (access(path.c_str(), X_OK) == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("no executable ", name, " at ", path,
                                          " (build it, or pass --",
                                          name == "ringside-ps" ? "ps" : "rank", "_binary=PATH)"));
}

// Waits for every shard's ready file (launch/await_file.h) under one deadline.
absl::StatusOr<std::vector<int>> WaitForShards(std::vector<launch::Subprocess>& shards,
                                               const launch::TempDir& dir, const CellSpec& spec,
                                               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<int> ports;
  for (size_t s = 0; s < shards.size(); ++s) {
    const int shard = static_cast<int>(s);
    ASSIGN_OR_RETURN(
        std::string text,
        launch::AwaitFileFrom(shards[s], ShardReadyPath(dir, shard), absl::StrCat("shard ", s),
                              std::max(deadline - absl::Now(), absl::ZeroDuration()),
                              /*log_lines=*/5));
    ASSIGN_OR_RETURN(ports.emplace_back(), ParseShardReady(text, spec, shard));
  }
  return ports;
}

// Runs the workers of a cell against its ready shards and reads their results.
absl::Status RunWorkers(const PsRunnerConfig& config, const CellSpec& spec,
                        const launch::TempDir& dir, const std::vector<int>& shard_ports,
                        CellResult* result) {
  std::vector<std::vector<std::string>> argvs;
  std::vector<std::string> result_files;
  for (int rank = 0; rank < spec.workers; ++rank) {
    result_files.push_back(WorkerResultFile(dir, rank));
    argvs.push_back(PsWorkerArgv(config, spec, rank, shard_ports, result_files.back()));
  }
  ASSIGN_OR_RETURN(std::vector<RankResult> ranks,
                   RunRankProcesses(argvs, result_files, dir, "worker", config.timeout));
  return AggregateRanks(std::move(ranks), result);
}

// Signals every shard first and then reaps them one by one, so the cell waits for the slowest
// shard's shutdown rather than for the sum (ringside-ps can take seconds to leave gRPC's
// shutdown). A second SIGTERM from Kill() is harmless to a daemon already stopping.
void StopShards(std::vector<launch::Subprocess>& shards) {
  for (launch::Subprocess& shard : shards) {
    if (shard.running()) kill(shard.pid(), SIGTERM);
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    const launch::ExitStatus exit = shards[s].Kill();
    // The workers' results are complete and checked by now: a shard that stops badly is
    // reported, but does not fail the cell.
    if (!exit.ok()) {
      std::cerr << "ringside-bench: warning: shard " << s << " did not stop cleanly after SIGTERM ("
                << exit.ToString() << ")\n";
    }
  }
}

absl::Status RunPsCellProcesses(const PsRunnerConfig& config, const CellSpec& spec,
                                CellResult* result) {
  if (spec.implementation != Implementation::kPs || spec.shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a PS cell: ", ImplementationName(spec.implementation), " with ",
                     spec.shards, " shards"));
  }
  RETURN_IF_ERROR(CheckExecutable(config.ps_binary, "ringside-ps"));
  RETURN_IF_ERROR(CheckExecutable(config.rank_binary, "ringside-bench"));
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-ps-bench-"));
  if (config.keep_temp) {
    dir.Keep();
    std::cerr << "ringside-bench: keeping " << dir.path() << "\n";
  }
  // Declared after `dir` so that the shards are gone before their directory is removed.
  std::vector<launch::Subprocess> shards;
  absl::Status status;
  for (int s = 0; s < spec.shards && status.ok(); ++s) {
    launch::SpawnOptions options;
    options.argv = PsShardArgv(config, spec, s, ShardReadyPath(dir, s));
    options.log_path = dir.File(absl::StrCat("shard-", s, ".log"));
    options.term_grace = config.shard_term_grace;
    absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
    status = process.status();
    if (process.ok()) shards.push_back(*std::move(process));
  }
  if (status.ok()) {
    absl::StatusOr<std::vector<int>> ports = WaitForShards(shards, dir, spec, config.ready_timeout);
    status = ports.ok() ? RunWorkers(config, spec, dir, *ports, result) : ports.status();
  }
  StopShards(shards);
  return status;
}

}  // namespace

std::vector<std::string> PsShardArgv(const PsRunnerConfig& config, const CellSpec& spec, int shard,
                                     const std::string& ready_file) {
  // SGD with lr 1 on zero parameters keeps every value a small exact integer, which is what the
  // workers' check expects.
  std::vector<std::string> argv = {config.ps_binary,
                                   absl::StrCat("--shard=", shard),
                                   absl::StrCat("--ps_shards=", spec.shards),
                                   absl::StrCat("--workers=", spec.workers),
                                   "--listen=127.0.0.1:0",
                                   "--metrics_listen=127.0.0.1:0",
                                   absl::StrCat("--elements=", spec.elements),
                                   "--optimizer=sgd",
                                   "--lr=1",
                                   absl::StrCat("--segment_bytes=", config.segment_bytes),
                                   absl::StrCat("--ready_file=", ready_file)};
  argv.insert(argv.end(), config.security_flags.begin(), config.security_flags.end());
  return argv;
}

std::vector<std::string> PsWorkerArgv(const PsRunnerConfig& config, const CellSpec& spec, int rank,
                                      const std::vector<int>& shard_ports,
                                      const std::string& result_file) {
  std::vector<std::string> shards;
  for (int port : shard_ports) shards.push_back(absl::StrCat("127.0.0.1:", port));
  std::vector<std::string> argv = {config.rank_binary,
                                   "ps-rank",
                                   absl::StrCat("--rank=", rank),
                                   absl::StrCat("--workers=", spec.workers),
                                   absl::StrCat("--ps=", absl::StrJoin(shards, ",")),
                                   absl::StrCat("--elements=", spec.elements),
                                   absl::StrCat("--iters=", spec.iters),
                                   absl::StrCat("--warmup=", spec.warmup),
                                   absl::StrCat("--segment_bytes=", config.segment_bytes),
                                   "--metrics_listen=127.0.0.1:0",
                                   absl::StrCat("--result_file=", result_file)};
  argv.insert(argv.end(), config.security_flags.begin(), config.security_flags.end());
  return argv;
}

absl::StatusOr<int> ParseShardReady(absl::string_view text, const CellSpec& spec, int shard) {
  absl::StatusOr<ReadyFile> ready = ParseReadyFile(text);
  if (!ready.ok()) return Annotate(ready.status(), absl::StrCat("shard ", shard));
  const ElementRange expected =
      EvenRanges(static_cast<uint64_t>(spec.elements), spec.shards)[shard];
  if (static_cast<uint64_t>(ready->range_begin) != expected.begin ||
      static_cast<uint64_t>(ready->range_end) != expected.end) {
    return absl::InternalError(absl::StrCat("shard ", shard, " owns [", ready->range_begin, ", ",
                                            ready->range_end, ") but the workers assume [",
                                            expected.begin, ", ", expected.end, ")"));
  }
  return ready->port;
}

CellResult RunPsCell(const PsRunnerConfig& config, const CellSpec& spec) {
  return MeasureCell(spec,
                     [&](CellResult* result) { return RunPsCellProcesses(config, spec, result); });
}

}  // namespace ringside::bench
