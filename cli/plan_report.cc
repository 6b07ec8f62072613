#include "cli/plan_report.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/report/format_units.h"

namespace ringside::cli {
namespace {

std::string TimeToTarget(const StepPrediction& p) {
  return p.time_to_target_seconds > 0 ? HumanSeconds(p.time_to_target_seconds) : "-";
}

std::string CellTable(const PlanCell& cell) {
  std::string out = absl::StrFormat("%-13s %10s %10s %10s %12s %10s  %s\n", "mode", "compute",
                                    "sync", "step", "samples/s", "to target", "dominant term");
  for (const StepPrediction& p : cell.ranking.modes) {
    absl::StrAppendFormat(&out, "%-13s %10s %10s %10s %12s %10s  %s\n", PlanModeName(p.mode),
                          HumanSeconds(p.compute_seconds), HumanSeconds(p.sync_seconds),
                          HumanSeconds(p.step_seconds), ShortNumber(p.samples_per_second),
                          TimeToTarget(p), p.dominant_term);
  }
  const PlanRanking& r = cell.ranking;
  absl::StrAppendFormat(&out, "first: %s, %.2f× ahead of %s; decided by %s\n",
                        PlanModeName(r.modes[0].mode), r.runner_up_margin,
                        PlanModeName(r.modes[1].mode), r.deciding_term);
  return out;
}

nlohmann::json PredictionJson(const StepPrediction& p) {
  return {{"mode", PlanModeName(p.mode)},
          {"compute_seconds", p.compute_seconds},
          {"wire_seconds", p.wire_seconds},
          {"latency_seconds", p.latency_seconds},
          {"cpu_seconds", p.cpu_seconds},
          {"shard_seconds", p.shard_seconds},
          {"pipeline_seconds", p.pipeline_seconds},
          {"sync_seconds", p.sync_seconds},
          {"overlap_seconds", p.overlap_seconds},
          {"step_seconds", p.step_seconds},
          {"samples_per_second", p.samples_per_second},
          {"time_to_target_seconds", p.time_to_target_seconds},
          {"busiest_bytes", p.busiest_bytes},
          {"dominant_term", p.dominant_term}};
}

PlanCluster CellShape(const PlanInput& input, int workers, int shards) {
  PlanCluster shape = input.shape;
  shape.workers = workers;
  shape.shards = shards;
  return shape;
}

}  // namespace

absl::StatusOr<std::vector<PlanCell>> PlanCells(const PlanInput& input) {
  std::vector<PlanCell> cells;
  for (int workers : input.worker_counts) {
    for (int shards : input.shard_counts) {
      absl::StatusOr<PlanRanking> ranking =
          RankModes(input.job, CellShape(input, workers, shards), input.costs, input.calibration);
      if (!ranking.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("N = ", workers, ", S = ", shards, ": ", ranking.status().message()));
      }
      cells.push_back({workers, shards, *std::move(ranking)});
    }
  }
  return cells;
}

std::string PlanTable(const PlanInput& input, const std::vector<PlanCell>& cells) {
  const ClusterCosts& c = input.costs;
  std::string out = absl::StrFormat(
      "plan: --model=%s (K = %s, %s on the wire), global batch %d, from %s\n"
      "  links %s of payload each way, α %s; compute %s/sample; sync CPU %.3g ns/byte; %.3g "
      "cores/process\n",
      input.model, WithThousands(static_cast<int64_t>(input.job.parameters)), input.wire_dtype,
      input.job.global_batch, input.costs_source, FormatBitRate(c.link_bytes_per_second),
      HumanSeconds(c.link_latency_seconds), HumanSeconds(c.compute_seconds_per_sample),
      c.sync_cpu_seconds_per_byte * 1e9, c.cores_per_process);
  if (!input.calibration_source.empty()) {
    absl::StrAppend(&out, "  calibrated by the runs of ", input.calibration_source, ": ",
                    CalibrationText(input.calibration), "; ps-backup and ps-staleness as ps\n");
  }
  if (input.shape.straggler >= 0) {
    absl::StrAppendFormat(&out, "  straggler worker-%d computes %g× slower\n",
                          input.shape.straggler, input.shape.straggler_factor);
  }
  for (const PlanCell& cell : cells) {
    absl::StrAppendFormat(&out, "\nN = %d workers, S = %d shards (colocated: S = N)\n",
                          cell.workers, cell.shards);
    out += CellTable(cell);
  }
  return out;
}

std::string CalibrationText(const PlanCalibration& calibration) {
  std::vector<std::string> parts;
  for (PlanMode mode : {PlanMode::kRing, PlanMode::kPs, PlanMode::kColocatedPs}) {
    const StepCalibration& c = calibration.of(mode);
    if (c.runs == 0) {
      parts.push_back(absl::StrCat(PlanModeName(mode), " as modelled (no run)"));
      continue;
    }
    parts.push_back(absl::StrFormat("%s compute ×%.3g, bandwidth ×%.3g, latency ×%.3g (%d run%s)",
                                    PlanModeName(mode), c.compute_scale, c.bandwidth_scale,
                                    c.latency_scale, c.runs, c.runs == 1 ? "" : "s"));
  }
  return absl::StrJoin(parts, "; ");
}

nlohmann::json PlanJson(const PlanInput& input, const std::vector<PlanCell>& cells) {
  nlohmann::json out_cells = nlohmann::json::array();
  for (const PlanCell& cell : cells) {
    nlohmann::json modes = nlohmann::json::array();
    for (const StepPrediction& p : cell.ranking.modes) modes.push_back(PredictionJson(p));
    out_cells.push_back({{"workers", cell.workers},
                         {"shards", cell.shards},
                         {"ranking", std::move(modes)},
                         {"first", PlanModeName(cell.ranking.modes[0].mode)},
                         {"runner_up", PlanModeName(cell.ranking.modes[1].mode)},
                         {"runner_up_margin", cell.ranking.runner_up_margin},
                         {"deciding_term", cell.ranking.deciding_term}});
  }
  const ClusterCosts& c = input.costs;
  nlohmann::json calibration = nullptr;  // --calibrate's fit per mode
  if (!input.calibration_source.empty()) {
    calibration = {{"source", input.calibration_source}};
    for (PlanMode mode : kAllPlanModes) {
      const StepCalibration& fit = input.calibration.of(mode);
      calibration[std::string(PlanModeName(mode))] = {{"runs", fit.runs},
                                                      {"compute_scale", fit.compute_scale},
                                                      {"bandwidth_scale", fit.bandwidth_scale},
                                                      {"latency_scale", fit.latency_scale}};
    }
  }
  return {{"plan_version", kPlanJsonVersion},
          {"model", input.model},
          {"activation", input.activation},
          {"parameters", input.job.parameters},
          {"wire_dtype", input.wire_dtype},
          {"global_batch", input.job.global_batch},
          {"buckets", input.job.buckets},
          {"steps_to_target", input.job.steps_to_target},
          {"straggler", input.shape.straggler >= 0
                            ? nlohmann::json{{"worker", input.shape.straggler},
                                             {"factor", input.shape.straggler_factor}}
                            : nlohmann::json(nullptr)},
          {"costs",
           {{"source", input.costs_source},
            {"link_bytes_per_second", c.link_bytes_per_second},
            {"link_latency_seconds", c.link_latency_seconds},
            {"compute_seconds_per_sample", c.compute_seconds_per_sample},
            {"sync_cpu_seconds_per_byte", c.sync_cpu_seconds_per_byte},
            {"cores_per_process", c.cores_per_process},
            {"shard_bytes_per_second", c.shard_bytes_per_second}}},
          {"calibration", std::move(calibration)},
          {"cells", std::move(out_cells)}};
}

}  // namespace ringside::cli
