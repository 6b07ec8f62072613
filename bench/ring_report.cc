#include "bench/ring_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/flag_types.h"

namespace ringside::bench {
namespace {

constexpr double kGiga = 1e9;

const ReportRow* FindGlooRing(const std::vector<ReportRow>& rows, const CellRow& row) {
  const std::string gloo(ImplementationName(Implementation::kGlooAllreduceRing));
  for (const ReportRow& other : rows) {
    if (other.cell.implementation == gloo && other.cell.workers == row.workers &&
        other.cell.bytes == row.bytes && other.cell.ran && other.busbw_gbps > 0) {
      return &other;
    }
  }
  return nullptr;
}

}  // namespace

double AlgBandwidth(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
}

double BusBandwidth(double algbw, int world) {
  return world > 0 ? algbw * 2.0 * (world - 1) / world : 0;
}

std::vector<ReportRow> BuildRows(const std::vector<CellResult>& cells) {
  std::vector<ReportRow> rows;
  for (const CellResult& cell : cells) {
    ReportRow row;
    row.cell = CellRowOf(cell);
    if (row.cell.ran) {
      const double algbw = AlgBandwidth(row.cell.bytes, cell.seconds_per_op);
      row.algbw_gbps = algbw / kGiga;
      row.busbw_gbps = BusBandwidth(algbw, row.cell.workers) / kGiga;
    }
    rows.push_back(std::move(row));
  }
  for (ReportRow& row : rows) {
    if (!row.cell.ran) continue;
    if (const ReportRow* gloo = FindGlooRing(rows, row.cell)) {
      row.ratio_vs_gloo = row.busbw_gbps / gloo->busbw_gbps;
    }
  }
  return rows;
}

std::string FormatTable(const std::vector<ReportRow>& rows) {
  std::string out =
      absl::StrFormat("%-20s %3s %8s %6s %12s %10s %10s %-6s %s\n", "implementation", "N", "size",
                      "iters", "time/op", "algbw GB/s", "busbw GB/s", "check", "busbw/gloo_ring");
  std::string errors;
  for (const ReportRow& row : rows) {
    const CellRow& cell = row.cell;
    if (!cell.ran) {
      absl::StrAppendFormat(&out, "%-20s %3d %8s %6d %12s %10s %10s %-6s %s\n", cell.implementation,
                            cell.workers, FormatByteSize(cell.bytes), cell.iters, "-", "-", "-",
                            "ERROR", "-");
      absl::StrAppend(&errors, "  ", cell.implementation, " N=", cell.workers, " ",
                      FormatByteSize(cell.bytes), ": ", cell.error, "\n");
      continue;
    }
    absl::StrAppendFormat(&out, "%-20s %3d %8s %6d %12s %10.3f %10.3f %-6s %s\n",
                          cell.implementation, cell.workers, FormatByteSize(cell.bytes), cell.iters,
                          FormatSeconds(cell.seconds_per_op), row.algbw_gbps, row.busbw_gbps,
                          cell.check_ok ? "ok" : "WRONG",
                          row.ratio_vs_gloo ? absl::StrFormat("%.2f", *row.ratio_vs_gloo) : "-");
  }
  if (!errors.empty()) absl::StrAppend(&out, "errors:\n", errors);
  return out;
}

nlohmann::json ToJson(const std::vector<ReportRow>& rows) {
  nlohmann::json records = nlohmann::json::array();
  for (const ReportRow& row : rows) {
    const CellRow& cell = row.cell;
    nlohmann::json record = {
        {"implementation", cell.implementation},
        {"workers", cell.workers},
        {"shards", 0},
        {"bytes", cell.bytes},
        {"elements", cell.elements},
        {"iters", cell.iters},
        {"seconds_per_op", cell.ran ? nlohmann::json(cell.seconds_per_op) : nlohmann::json()},
        {"algbw", cell.ran ? nlohmann::json(row.algbw_gbps) : nlohmann::json()},
        {"busbw", cell.ran ? nlohmann::json(row.busbw_gbps) : nlohmann::json()},
        {"check_ok", cell.ran && cell.check_ok},
        {"max_abs_error", cell.max_abs_error},
        {"busbw_ratio_vs_gloo_allreduce_ring",
         row.ratio_vs_gloo ? nlohmann::json(*row.ratio_vs_gloo) : nlohmann::json()},
    };
    if (!cell.ran) record["error"] = cell.error;
    records.push_back(std::move(record));
  }
  return {{"benchmark", "ring"},
          {"units",
           {{"seconds_per_op", "seconds (slowest rank's median)"},
            {"algbw", "GB/s (1e9 bytes/s): bytes / seconds_per_op"},
            {"busbw", "GB/s: algbw * 2(N-1)/N"}}},
          {"records", std::move(records)}};
}

}  // namespace ringside::bench
