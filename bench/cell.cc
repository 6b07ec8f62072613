#include "bench/cell.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ringside::bench {

absl::string_view ImplementationName(Implementation implementation) {
  switch (implementation) {
    case Implementation::kRingside:
      return "ringside";
    case Implementation::kGlooAllreduceRing:
      return "gloo_allreduce_ring";
    case Implementation::kGlooRingChunked:
      return "gloo_ring_chunked";
    case Implementation::kPs:
      return "ps";
  }
  return "unknown";
}

bool IsGloo(Implementation implementation) {
  return implementation == Implementation::kGlooAllreduceRing ||
         implementation == Implementation::kGlooRingChunked;
}

absl::Status AggregateRanks(std::vector<RankResult> ranks, CellResult* cell) {
  const CellSpec& spec = cell->spec;
  if (static_cast<int>(ranks.size()) != spec.workers) {
    return absl::InternalError(
        absl::StrCat("expected ", spec.workers, " rank results, got ", ranks.size()));
  }
  cell->seconds_per_op = 0;
  cell->check_ok = true;
  cell->max_abs_error = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankResult& r = ranks[i];
    if (r.rank != static_cast<int>(i) || r.world != spec.workers || r.elements != spec.elements ||
        r.iters != spec.iters) {
      return absl::InternalError(absl::StrCat("rank ", i, " reported rank=", r.rank,
                                              " world=", r.world, " elements=", r.elements,
                                              " iters=", r.iters, "; expected world=", spec.workers,
                                              " elements=", spec.elements, " iters=", spec.iters));
    }
    if (!(r.seconds_per_op > 0)) {
      return absl::InternalError(
          absl::StrCat("rank ", i, " reported seconds_per_op=", r.seconds_per_op));
    }
    cell->seconds_per_op = std::max(cell->seconds_per_op, r.seconds_per_op);
    cell->check_ok = cell->check_ok && r.check_ok;
    cell->max_abs_error = std::max(cell->max_abs_error, r.max_abs_error);
  }
  cell->ranks = std::move(ranks);
  return absl::OkStatus();
}

CellResult MeasureCell(const CellSpec& spec, absl::FunctionRef<absl::Status(CellResult*)> run) {
  CellResult result;
  result.spec = spec;
  result.status = run(&result);
  if (!result.status.ok()) result.check_ok = false;
  return result;
}

CellRow CellRowOf(const CellResult& cell) {
  CellRow row;
  row.implementation = std::string(ImplementationName(cell.spec.implementation));
  row.workers = cell.spec.workers;
  row.shards = cell.spec.shards;
  row.bytes = cell.spec.bytes();
  row.elements = cell.spec.elements;
  row.iters = cell.spec.iters;
  row.ran = cell.status.ok();
  if (row.ran) {
    row.seconds_per_op = cell.seconds_per_op;
    row.check_ok = cell.check_ok;
    row.max_abs_error = cell.max_abs_error;
  } else {
    row.error = cell.status.ToString();
  }
  return row;
}

std::string FormatSeconds(double seconds) {
  if (seconds >= 1) return absl::StrFormat("%.3f s", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%.3f ms", seconds * 1e3);
  return absl::StrFormat("%.1f us", seconds * 1e6);
}

}  // namespace ringside::bench
