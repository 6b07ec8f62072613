// Runs one cell of the ring benchmark: one implementation, one world size, one buffer size.
// Starts `spec.workers` rank processes on loopback (Ringside's `ringside-bench ring-rank`
// (bench/rank_jobs.h), or this binary re-executed as the hidden `gloo-rank` subcommand), waits for
// all of them under a timeout, and reads their result files (rank_result.h). The slowest rank
// bounds a collective, so a cell's time per op is the maximum over ranks.
//
// Each cell gets a fresh temporary directory (rendezvous files, per-rank logs and results),
// removed afterwards unless `keep_temp`. Ports are picked at run time, never fixed.
//
// Errors: a cell that cannot run (missing worker binary, a rank that fails or times out, a
// malformed result) is recorded in CellResult::status (bench/cell.h), with the failing rank's log
// tail, so a sweep goes on with its other cells. Thread-compatible.
#ifndef RINGSIDE_BENCH_RING_RUNNER_H_
#define RINGSIDE_BENCH_RING_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/cell.h"

namespace ringside::bench {

// The ring benchmark's implementations by name ("ringside", "gloo_allreduce_ring",
// "gloo_ring_chunked"); INVALID_ARGUMENT for any other (the PS is not one of them).
absl::StatusOr<Implementation> ParseImplementation(absl::string_view text);

// Flag type for --implementations=ringside,gloo_allreduce_ring,...
struct ImplementationList {
  std::vector<Implementation> values;
};
bool AbslParseFlag(absl::string_view text, ImplementationList* out, std::string* error);
std::string AbslUnparseFlag(const ImplementationList& list);

struct RunnerConfig {
  std::string self_binary;          // this benchmark, re-executed as `gloo-rank`
  std::string rank_binary;          // runs Ringside's ranks (`ring-rank`): normally ringside-bench
  int64_t segment_bytes = 1 << 20;  // passed to ring-rank --segment_bytes
  absl::Duration timeout = absl::Seconds(120);      // for a whole cell
  absl::Duration gloo_timeout = absl::Seconds(30);  // per Gloo operation inside a rank
  bool keep_temp = false;
  // Security flags of Ringside's ranks. Plaintext: Gloo's TCP transport has no TLS, so the
  // comparison stays like for like (the cost of TLS: docs/benchmarks.md, `ringside compare`).
  std::vector<std::string> security_flags = {"--insecure"};
};

// Timed iterations for a buffer of `bytes` when the user gave none: about 512 MiB of payload
// per cell, clamped to [5, 1000], so small cells are not all start-up and large ones stay short.
int DefaultIters(int64_t bytes);

// argv of rank `rank` (pure; exposed for tests).
std::vector<std::string> RingsideWorkerArgv(const RunnerConfig& config, const CellSpec& spec,
                                            int rank, const std::vector<int>& ports,
                                            const std::string& result_file);
std::vector<std::string> GlooRankArgv(const RunnerConfig& config, const CellSpec& spec, int rank,
                                      const std::string& store_dir, const std::string& result_file);

// Runs a ring cell (Ringside's or a Gloo implementation) to completion, or failure, recorded in
// the result's status.
CellResult RunCell(const RunnerConfig& config, const CellSpec& spec);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_RING_RUNNER_H_
