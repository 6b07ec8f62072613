// Runs one cell of the parameter-server benchmark (N workers, S shards, K float32 elements; a
// CellSpec of bench/cell.h with implementation kPs). ps_report.h turns PS cells and their ring
// counterparts into a table and JSON.
//
// A cell starts S fresh `ringside-ps --elements=K` shards (a benchmark shard keeps its
// parameters across steps and the workers' check assumes it saw exactly warmup + iters steps, so
// shards are never reused between cells), waits for their ready files, then runs N
// `ringside-bench ps-rank` processes (bench/rank_jobs.h) to completion and stops the shards. Every
// worker pushes its whole gradient and pulls the whole parameter vector back each step, so a
// step ends with the slowest worker: the cell's time per step is the maximum over workers of
// their median.
//
// Each cell gets a fresh temporary directory (ready files, logs, results), removed afterwards
// unless `keep_temp`. Shards listen on port 0 and report their port; nothing is fixed.
//
// Errors: a cell that cannot run (missing binary, a shard that dies or never becomes ready, a
// worker that fails or times out, a malformed result) is recorded in CellResult::status with
// the failing process's log tail, so a sweep goes on with its other cells. Thread-compatible.
#ifndef RINGSIDE_BENCH_PS_RUNNER_H_
#define RINGSIDE_BENCH_PS_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/cell.h"

namespace ringside::bench {

struct PsRunnerConfig {
  std::string ps_binary;            // ringside-ps
  std::string rank_binary;          // runs Ringside's ranks (`ps-rank`): normally ringside-bench
  int64_t segment_bytes = 1 << 20;  // --segment_bytes of shards and workers
  absl::Duration timeout = absl::Seconds(120);       // the workers of one cell
  absl::Duration ready_timeout = absl::Seconds(30);  // all shards of one cell to become ready
  // SIGTERM to SIGKILL for a shard. ringside-ps's exit can wait ~10 s in gRPC's shutdown
  // (grpc_shutdown joining an executor thread in a long epoll_wait); a clean exit is worth it.
  absl::Duration shard_term_grace = absl::Seconds(15);
  bool keep_temp = false;
  // Security flags of every shard and rank: plaintext, like the ring benchmark's.
  std::vector<std::string> security_flags = {"--insecure"};
};

// argv of shard `shard` and of worker `rank` (pure; exposed for tests). `shard_ports` are the
// shards' ports in shard order.
std::vector<std::string> PsShardArgv(const PsRunnerConfig& config, const CellSpec& spec, int shard,
                                     const std::string& ready_file);
std::vector<std::string> PsWorkerArgv(const PsRunnerConfig& config, const CellSpec& spec, int rank,
                                      const std::vector<int>& shard_ports,
                                      const std::string& result_file);

// The port in shard `shard`'s ready file, after checking that the shard owns the range the
// workers will assume (EvenRanges(K, S)[shard]).
absl::StatusOr<int> ParseShardReady(absl::string_view text, const CellSpec& spec, int shard);

// Runs a PS cell (implementation kPs, 1 or more shards) to completion, or failure, recorded in
// the result's status. Each worker's time is its median push-pull step.
CellResult RunPsCell(const PsRunnerConfig& config, const CellSpec& spec);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_PS_RUNNER_H_
