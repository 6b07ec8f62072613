#include "bench/ring_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/flag_types.h"

namespace ringside::bench {
namespace {

constexpr double kGiga = 1e9;

const ReportRow* FindGlooRing(const std::vector<ReportRow>& rows, const ReportRow& row) {
  const std::string gloo(ImplementationName(Implementation::kGlooAllreduceRing));
  for (const ReportRow& other : rows) {
    if (other.implementation == gloo && other.workers == row.workers && other.bytes == row.bytes &&
        other.ran && other.busbw_gbps > 0) {
      return &other;
    }
  }
  return nullptr;
}

std::string FormatSeconds(double seconds) {
  if (seconds >= 1) return absl::StrFormat("%.3f s", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%.3f ms", seconds * 1e3);
  return absl::StrFormat("%.1f us", seconds * 1e6);
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
    row.implementation = std::string(ImplementationName(cell.spec.implementation));
    row.workers = cell.spec.world;
    row.bytes = cell.spec.bytes();
    row.elements = cell.spec.elements;
    row.iters = cell.spec.iters;
    row.ran = cell.status.ok();
    if (row.ran) {
      row.seconds_per_op = cell.seconds_per_op;
      const double algbw = AlgBandwidth(row.bytes, cell.seconds_per_op);
      row.algbw_gbps = algbw / kGiga;
      row.busbw_gbps = BusBandwidth(algbw, row.workers) / kGiga;
      row.check_ok = cell.check_ok;
      row.max_abs_error = cell.max_abs_error;
    } else {
      row.error = cell.status.ToString();
    }
    rows.push_back(std::move(row));
  }
  for (ReportRow& row : rows) {
    if (!row.ran) continue;
    if (const ReportRow* gloo = FindGlooRing(rows, row)) {
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
    if (!row.ran) {
      absl::StrAppendFormat(&out, "%-20s %3d %8s %6d %12s %10s %10s %-6s %s\n", row.implementation,
                            row.workers, FormatByteSize(row.bytes), row.iters, "-", "-", "-",
                            "ERROR", "-");
      absl::StrAppend(&errors, "  ", row.implementation, " N=", row.workers, " ",
                      FormatByteSize(row.bytes), ": ", row.error, "\n");
      continue;
    }
    absl::StrAppendFormat(&out, "%-20s %3d %8s %6d %12s %10.3f %10.3f %-6s %s\n",
                          row.implementation, row.workers, FormatByteSize(row.bytes), row.iters,
                          FormatSeconds(row.seconds_per_op), row.algbw_gbps, row.busbw_gbps,
                          row.check_ok ? "ok" : "WRONG",
                          row.ratio_vs_gloo ? absl::StrFormat("%.2f", *row.ratio_vs_gloo) : "-");
  }
  if (!errors.empty()) absl::StrAppend(&out, "errors:\n", errors);
  return out;
}

nlohmann::json ToJson(const std::vector<ReportRow>& rows) {
  nlohmann::json records = nlohmann::json::array();
  for (const ReportRow& row : rows) {
    nlohmann::json record = {
        {"implementation", row.implementation},
        {"workers", row.workers},
        {"shards", 0},
        {"bytes", row.bytes},
        {"elements", row.elements},
        {"iters", row.iters},
        {"seconds_per_op", row.ran ? nlohmann::json(row.seconds_per_op) : nlohmann::json()},
        {"algbw", row.ran ? nlohmann::json(row.algbw_gbps) : nlohmann::json()},
        {"busbw", row.ran ? nlohmann::json(row.busbw_gbps) : nlohmann::json()},
        {"check_ok", row.ran && row.check_ok},
        {"max_abs_error", row.max_abs_error},
        {"busbw_ratio_vs_gloo_allreduce_ring",
         row.ratio_vs_gloo ? nlohmann::json(*row.ratio_vs_gloo) : nlohmann::json()},
    };
    if (!row.ran) record["error"] = row.error;
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
