// Turns parameter-server cells and their ring counterparts (cells of bench/cell.h, run by
// ps_runner.h and ring_runner.h) into the PS benchmark's rows, text table and JSON. A PS row
// carries the ring cell of the same N and K, measured in the same run, and the ratio of the two
// times; every row carries the cost model's bytes into the busiest node per step
// (common/cost_model.h).
//
// Pure functions; thread-safe.
#ifndef RINGSIDE_BENCH_PS_REPORT_H_
#define RINGSIDE_BENCH_PS_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/cell.h"
#include "nlohmann/json.hpp"

namespace ringside::bench {

struct PsReportRow {
  CellRow cell;  // implementation "ps" or "ringside"
  int64_t busiest_node_bytes = 0;
  std::optional<double> ring_seconds_per_op;  // PS rows: the ring cell of the same N and K
  std::optional<double> ratio_to_ring;        // PS rows: seconds_per_op / ring_seconds_per_op
};

// Ring rows come from `ring_cells`, matched to PS rows by workers and elements. Rows are grouped
// by (N, K) in the order the PS cells are given, the ring row first.
std::vector<PsReportRow> BuildPsRows(const std::vector<CellResult>& ps_cells,
                                     const std::vector<CellResult>& ring_cells);

// Fixed-width table, one line per row, then one line per failed cell's error.
std::string FormatPsTable(const std::vector<PsReportRow>& rows);

// {"benchmark":"ps","units":{...},"records":[{implementation, workers, shards (PS only), bytes,
// elements, iters, seconds_per_op (null when failed), check_ok, max_abs_error,
// busiest_node_bytes, ring_seconds_per_op and ratio_to_ring (PS only; null when unknown),
// error (when failed)}]}
nlohmann::json PsToJson(const std::vector<PsReportRow>& rows);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_PS_REPORT_H_
