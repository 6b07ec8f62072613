#include "bench/ps_report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/flag_types.h"
#include "common/cost_model.h"

namespace ringside::bench {
namespace {

// Analytic byte counts are often fractions of a MiB (2(N-1)/N, N/S): two decimals, not
// FormatByteSize's exact but unwieldy "1536KiB".
std::string FormatBytesPerStep(int64_t bytes) {
  if (bytes >= (1 << 20))
    return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return absl::StrFormat("%.2f KiB", static_cast<double>(bytes) / (1 << 10));
}

PsReportRow RingRow(const CellResult& cell) {
  PsReportRow row;
  row.cell = CellRowOf(cell);
  row.busiest_node_bytes =
      static_cast<int64_t>(RingBusiestNode(cell.spec.elements, cell.spec.workers).elements * 4);
  return row;
}

PsReportRow PsRow(const CellResult& cell, const CellResult* ring) {
  PsReportRow row;
  row.cell = CellRowOf(cell);
  row.busiest_node_bytes = static_cast<int64_t>(
      PsBusiestNode(cell.spec.elements, cell.spec.workers, cell.spec.shards).elements * 4);
  if (row.cell.ran && ring != nullptr && ring->status.ok() && ring->seconds_per_op > 0) {
    row.ring_seconds_per_op = ring->seconds_per_op;
    row.ratio_to_ring = row.cell.seconds_per_op / ring->seconds_per_op;
  }
  return row;
}

nlohmann::json OrNull(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace

std::vector<PsReportRow> BuildPsRows(const std::vector<CellResult>& ps_cells,
                                     const std::vector<CellResult>& ring_cells) {
  const auto find_ring = [&](int workers, int64_t elements) -> const CellResult* {
    for (const CellResult& ring : ring_cells) {
      if (ring.spec.workers == workers && ring.spec.elements == elements) return &ring;
    }
    return nullptr;
  };
  std::vector<PsReportRow> rows;
  std::vector<const CellResult*> emitted;
  for (const CellResult& cell : ps_cells) {
    const CellResult* ring = find_ring(cell.spec.workers, cell.spec.elements);
    if (ring != nullptr && std::find(emitted.begin(), emitted.end(), ring) == emitted.end()) {
      rows.push_back(RingRow(*ring));
      emitted.push_back(ring);
    }
    rows.push_back(PsRow(cell, ring));
  }
  for (const CellResult& ring : ring_cells) {
    if (std::find(emitted.begin(), emitted.end(), &ring) == emitted.end()) {
      rows.push_back(RingRow(ring));
    }
  }
  return rows;
}

std::string FormatPsTable(const std::vector<PsReportRow>& rows) {
  std::string out =
      absl::StrFormat("%-9s %3s %3s %8s %6s %12s %12s %7s %15s %s\n", "impl", "N", "S", "size",
                      "iters", "time/step", "ring time/op", "ps/ring", "busiest in/step", "check");
  std::string errors;
  for (const PsReportRow& row : rows) {
    const CellRow& cell = row.cell;
    const std::string shards = cell.shards > 0 ? absl::StrCat(cell.shards) : "-";
    if (!cell.ran) {
      absl::StrAppendFormat(&out, "%-9s %3d %3s %8s %6d %12s %12s %7s %15s %s\n",
                            cell.implementation, cell.workers, shards, FormatByteSize(cell.bytes),
                            cell.iters, "-", "-", "-", FormatBytesPerStep(row.busiest_node_bytes),
                            "ERROR");
      absl::StrAppend(&errors, "  ", cell.implementation, " N=", cell.workers,
                      cell.shards > 0 ? absl::StrCat(" S=", cell.shards) : "", " ",
                      FormatByteSize(cell.bytes), ": ", cell.error, "\n");
      continue;
    }
    absl::StrAppendFormat(
        &out, "%-9s %3d %3s %8s %6d %12s %12s %7s %15s %s\n", cell.implementation, cell.workers,
        shards, FormatByteSize(cell.bytes), cell.iters, FormatSeconds(cell.seconds_per_op),
        row.ring_seconds_per_op ? FormatSeconds(*row.ring_seconds_per_op) : "-",
        row.ratio_to_ring ? absl::StrFormat("%.2f", *row.ratio_to_ring) : "-",
        FormatBytesPerStep(row.busiest_node_bytes), cell.check_ok ? "ok" : "WRONG");
  }
  if (!errors.empty()) absl::StrAppend(&out, "errors:\n", errors);
  return out;
}

nlohmann::json PsToJson(const std::vector<PsReportRow>& rows) {
  nlohmann::json records = nlohmann::json::array();
  for (const PsReportRow& row : rows) {
    const CellRow& cell = row.cell;
    nlohmann::json record = {
        {"implementation", cell.implementation},
        {"workers", cell.workers},
        {"bytes", cell.bytes},
        {"elements", cell.elements},
        {"iters", cell.iters},
        {"seconds_per_op", cell.ran ? nlohmann::json(cell.seconds_per_op) : nlohmann::json()},
        {"check_ok", cell.ran && cell.check_ok},
        {"max_abs_error", cell.max_abs_error},
        {"busiest_node_bytes", row.busiest_node_bytes},
    };
    if (cell.implementation == "ps") {
      record["shards"] = cell.shards;
      record["ring_seconds_per_op"] = OrNull(row.ring_seconds_per_op);
      record["ratio_to_ring"] = OrNull(row.ratio_to_ring);
    }
    if (!cell.ran) record["error"] = cell.error;
    records.push_back(std::move(record));
  }
  return {{"benchmark", "ps"},
          {"units",
           {{"seconds_per_op",
             "seconds: PS, the slowest worker's median push-pull step; ring, the slowest rank's "
             "median allreduce"},
            {"ratio_to_ring", "PS seconds_per_op / ring seconds_per_op for the same N and K"},
            {"busiest_node_bytes",
             "analytic bytes into the busiest node per step: PS max(N*ceil(K/S), K)*4, ring "
             "2(N-1)K/N*4"}}},
          {"records", std::move(records)}};
}

}  // namespace ringside::bench
