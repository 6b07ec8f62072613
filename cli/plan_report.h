// `ringside plan`'s output: the step model (common/step_model.h) on every cluster size asked for,
// as a table (stdout), JSON (--json) and an SVG chart of predicted step time against N from 1 to
// 1024 per mode, with measured points laid on it (--chart). Pure; thread-safe. Errors:
// INVALID_ARGUMENT from the model's checks, naming the cell (N, S) that cannot exist.
#ifndef RINGSIDE_CLI_PLAN_REPORT_H_
#define RINGSIDE_CLI_PLAN_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/step_model.h"
#include "nlohmann/json.hpp"

namespace ringside::cli {

inline constexpr int kPlanJsonVersion = 1;

struct PlanInput {
  std::string model;  // --model as given
  std::string activation;
  std::string wire_dtype;  // "fp32", "fp16", "bf16"
  PlanJob job;
  std::vector<int> worker_counts;  // one cell per (N, S) pair
  std::vector<int> shard_counts;
  PlanCluster shape;  // straggler, backup workers, staleness; workers and shards per cell
  ClusterCosts costs;
  std::string costs_source;        // where the costs came from: "probe FILE", "--link_rate=10gbit"
  PlanCalibration calibration;     // --calibrate's fit; the identity without
  std::string calibration_source;  // its files; empty: not calibrated
};

struct PlanCell {
  int workers = 0;
  int shards = 0;
  PlanRanking ranking;
};

// One cell per (N, S), workers outer, in the lists' order.
absl::StatusOr<std::vector<PlanCell>> PlanCells(const PlanInput& input);

std::string PlanTable(const PlanInput& input, const std::vector<PlanCell>& cells);
// "ring compute ×0.95, bandwidth ×0.77, latency ×20.3 (2 runs); ps-colocated as modelled (no
// run); ..."
std::string CalibrationText(const PlanCalibration& calibration);
nlohmann::json PlanJson(const PlanInput& input, const std::vector<PlanCell>& cells);

// A measured step of a run, drawn over the curves.
struct MeasuredStep {
  std::string mode;  // PlanModeName's
  int workers = 0;
  double step_seconds = 0;
};
// Step seconds against N (1 to 1024, log-log) per mode at input.shard_counts' first S (colocated
// at S = N), the measured points on it. Cannot fail (a bad cell is left out of its curve).
std::string PlanChartSvg(const PlanInput& input, const std::vector<MeasuredStep>& measured);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_PLAN_REPORT_H_
