// One benchmark cell, whatever runs it: an implementation (Ringside's ring allreduce, a Gloo
// baseline or the parameter server) at N workers (ranks), S shards (the PS only) and K float32
// elements, and what it measured. The ring runner (ring_runner.h) and the PS runner
// (ps_runner.h) both run cells of this type; the reports (ring_report.h, ps_report.h) turn them
// into rows that start with the same CellRow.
//
// Every rank of a cell writes a RankResult (common/rank_result.h); a collective or a push-pull
// step ends with the slowest rank, so a cell's time per op is the maximum over ranks of each
// rank's median.
//
// Pure functions; thread-safe.
#ifndef RINGSIDE_BENCH_CELL_H_
#define RINGSIDE_BENCH_CELL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/rank_result.h"

namespace ringside::bench {

enum class Implementation { kRingside, kGlooAllreduceRing, kGlooRingChunked, kPs };
// "ringside", "gloo_allreduce_ring", "gloo_ring_chunked", "ps".
absl::string_view ImplementationName(Implementation implementation);
bool IsGloo(Implementation implementation);

struct CellSpec {
  Implementation implementation = Implementation::kRingside;
  int workers = 2;       // ranks (N)
  int shards = 0;        // parameter-server shards (S); 0 for a ring
  int64_t elements = 0;  // float32 elements per allreduce, or pushed and pulled per PS step
  int iters = 1;
  int warmup = 0;
  int64_t bytes() const { return elements * 4; }
};

struct CellResult {
  CellSpec spec;
  absl::Status status;        // OK when every rank reported a result
  double seconds_per_op = 0;  // max over ranks of each rank's seconds_per_op (a median)
  bool check_ok = false;      // every value every rank checked was exact
  double max_abs_error = 0;   // max over ranks
  std::vector<RankResult> ranks;
};

// Checks the rank results of one cell (one per rank, in rank order, of the cell's size) and
// folds them into `cell` (max time, all checks). INTERNAL, naming the rank, for a result that
// does not fit.
absl::Status AggregateRanks(std::vector<RankResult> ranks, CellResult* cell);

// A cell of `spec` measured by `run` (which fills the result, normally through AggregateRanks);
// its status is run's, and a cell that failed has no passing check.
CellResult MeasureCell(const CellSpec& spec, absl::FunctionRef<absl::Status(CellResult*)> run);

// What every report row says of its cell, figures only when it ran.
struct CellRow {
  std::string implementation;
  int workers = 0;
  int shards = 0;  // 0 for a ring
  int64_t bytes = 0;
  int64_t elements = 0;
  int iters = 0;
  bool ran = false;  // the cell produced numbers (its status was OK)
  double seconds_per_op = 0;
  bool check_ok = false;
  double max_abs_error = 0;
  std::string error;  // why the cell did not run; empty when it ran
};
CellRow CellRowOf(const CellResult& cell);

// 1.5 -> "1.500 s", 0.0012 -> "1.200 ms", 4.2e-5 -> "42.0 us": the tables' time columns.
std::string FormatSeconds(double seconds);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_CELL_H_
