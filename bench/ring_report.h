// Turns ring benchmark cells into figures (nccl-tests definitions), a text table and JSON.
//   algbw = bytes / seconds_per_op, bytes = elements * 4 (float32)
//   busbw = algbw * 2 (N - 1) / N     (the per-link rate a ring allreduce must sustain)
// and, for every row, busbw / busbw of gloo_allreduce_ring for the same world and size (> 1:
// faster than Gloo's ring), when that cell ran and succeeded.
//
// Pure functions; thread-safe. Bandwidths are in GB/s (1e9 bytes per second), as nccl-tests.
#ifndef RINGSIDE_BENCH_RING_REPORT_H_
#define RINGSIDE_BENCH_RING_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/cell.h"
#include "nlohmann/json.hpp"

namespace ringside::bench {

// Bytes per second; 0 when `seconds` is not positive.
double AlgBandwidth(int64_t bytes, double seconds);
double BusBandwidth(double algbw, int world);

struct ReportRow {
  CellRow cell;
  double algbw_gbps = 0;  // 0 when the cell did not run
  double busbw_gbps = 0;
  std::optional<double> ratio_vs_gloo;  // busbw / busbw(gloo_allreduce_ring)
};

std::vector<ReportRow> BuildRows(const std::vector<CellResult>& cells);

// Fixed-width table, one line per row, then one line per failed cell's error.
std::string FormatTable(const std::vector<ReportRow>& rows);

// {"benchmark":"ring","units":{...},"records":[{implementation, workers, shards (0: not
// applicable to a ring), bytes, elements, iters, seconds_per_op, algbw, busbw, check_ok,
// max_abs_error, busbw_ratio_vs_gloo_allreduce_ring (null when unknown), error (when failed)}]}
nlohmann::json ToJson(const std::vector<ReportRow>& rows);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_RING_REPORT_H_
