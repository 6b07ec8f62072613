// Runs one cell of the parameter-server benchmark (N workers, S shards, K float32 elements) and
// turns PS cells and their ring counterparts into a table and JSON.
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
// worker that fails or times out, a malformed result) is recorded in PsCellResult::status with
// the failing process's log tail, so a sweep goes on with its other cells. Thread-compatible;
// the report functions are pure and thread-safe.
#ifndef RINGSIDE_BENCH_PS_RUNNER_H_
#define RINGSIDE_BENCH_PS_RUNNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/ring_runner.h"
#include "common/rank_result.h"
#include "nlohmann/json.hpp"

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

struct PsCellSpec {
  int workers = 2;
  int shards = 1;
  int64_t elements = 0;  // float32 elements pushed and pulled per step by every worker
  int iters = 1;
  int warmup = 0;
  int64_t bytes() const { return elements * 4; }
};

struct PsCellResult {
  PsCellSpec spec;
  absl::Status status;        // OK when every worker reported a result
  double seconds_per_op = 0;  // max over workers of each worker's median step
  bool check_ok = false;      // every value every worker pulled back was exact
  double max_abs_error = 0;   // max over workers
  std::vector<RankResult> workers;
};

// argv of shard `shard` and of worker `rank` (pure; exposed for tests). `shard_ports` are the
// shards' ports in shard order.
std::vector<std::string> PsShardArgv(const PsRunnerConfig& config, const PsCellSpec& spec,
                                     int shard, const std::string& ready_file);
std::vector<std::string> PsWorkerArgv(const PsRunnerConfig& config, const PsCellSpec& spec,
                                      int rank, const std::vector<int>& shard_ports,
                                      const std::string& result_file);

// The port in shard `shard`'s ready file, after checking that the shard owns the range the
// workers will assume (EvenRanges(K, S)[shard]).
absl::StatusOr<int> ParseShardReady(absl::string_view text, const PsCellSpec& spec, int shard);

// Checks the worker results of one cell and folds them into `cell` (max time, all checks).
absl::Status AggregatePsWorkers(std::vector<RankResult> workers, PsCellResult* cell);

// Runs the cell to completion (or failure, recorded in the result's status).
PsCellResult RunPsCell(const PsRunnerConfig& config, const PsCellSpec& spec);

struct PsReportRow {
  std::string implementation;  // "ps" or "ringside"
  int workers = 0;
  int shards = 0;  // 0 for the ring
  int64_t bytes = 0;
  int64_t elements = 0;
  int iters = 0;
  bool ran = false;  // the cell produced numbers (its status was OK)
  double seconds_per_op = 0;
  bool check_ok = false;
  double max_abs_error = 0;
  int64_t busiest_node_bytes = 0;
  std::optional<double> ring_seconds_per_op;  // PS rows: the ring cell of the same N and K
  std::optional<double> ratio_to_ring;        // PS rows: seconds_per_op / ring_seconds_per_op
  std::string error;                          // why the cell did not run; empty when it ran
};

// Ring rows come from `ring_cells`, matched to PS rows by workers and elements. Rows are grouped
// by (N, K) in the order the PS cells are given, the ring row first.
std::vector<PsReportRow> BuildPsRows(const std::vector<PsCellResult>& ps_cells,
                                     const std::vector<CellResult>& ring_cells);

// Fixed-width table, one line per row, then one line per failed cell's error.
std::string FormatPsTable(const std::vector<PsReportRow>& rows);

// {"benchmark":"ps","units":{...},"records":[{implementation, workers, shards (PS only), bytes,
// elements, iters, seconds_per_op (null when failed), check_ok, max_abs_error,
// busiest_node_bytes, ring_seconds_per_op and ratio_to_ring (PS only; null when unknown),
// error (when failed)}]}
nlohmann::json PsToJson(const std::vector<PsReportRow>& rows);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_PS_RUNNER_H_
