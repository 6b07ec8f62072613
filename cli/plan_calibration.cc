#include "cli/plan_calibration.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/ps/ps_client.h"

namespace ringside::cli {
namespace {

using nlohmann::json;

constexpr double kMaxCount = 1 << 20;  // workers, shards: plan's own bound
constexpr double kMaxBatch = 1 << 30;

// A number in `object[key]` within [low, high], or `fallback` (absent, not a number, out of
// range: a file is not trusted to hold what fits the cast).
double NumberAt(const json& object, const char* key, double low, double high, double fallback) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return fallback;
  const double value = object[key].get<double>();
  return std::isfinite(value) && value >= low && value <= high ? value : fallback;
}

// The mode object's run, if it has a step median and a final world in range.
bool RunOf(const json& config, const json& m, PlanMode mode, MeasuredRun& run) {
  if (!m.is_object()) return false;
  const json step = m.value("step_seconds", json::object());
  const double world = NumberAt(m, "final_world", 1, kMaxCount, 0);
  const double step_p50 = NumberAt(step, "p50", 0, 1e9, -1);
  if (world < 1 || step_p50 <= 0) return false;
  run.mode = mode;
  run.workers = static_cast<int>(world);
  run.shards = mode == PlanMode::kColocatedPs
                   ? run.workers
                   : static_cast<int>(NumberAt(config, "ps_shards", 1, kMaxCount, 1));
  run.batch_size = static_cast<int64_t>(NumberAt(config, "batch_size", 1, kMaxBatch, 0));
  const double element_bytes = NumberAt(config, "element_bytes", 2, 4, 4);
  run.element_bytes = element_bytes == 2 ? 2 : 4;
  const double window = NumberAt(config, "ps_window_bytes", 16, server::kMaxPsWindowBytes, 0);
  run.ps_segment_bytes = window > 0 ? server::PsPushSegmentBytes(static_cast<uint64_t>(window)) : 0;
  run.step_seconds = step_p50;
  run.sync_seconds = NumberAt(m.value("sync_seconds", json::object()), "p50", 0, 1e9, -1);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<MeasuredRun>> ReadMeasuredRuns(absl::string_view flag,
                                                          const std::string& path,
                                                          const std::string& model) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  const json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": not a ringside compare --json file (no \"jobs\")"));
  }
  const std::pair<const char*, PlanMode> modes[] = {
      {"ring", PlanMode::kRing}, {"ps", PlanMode::kPs}, {"ps_colocated", PlanMode::kColocatedPs}};
  std::vector<MeasuredRun> runs;
  for (const json& job : doc["jobs"]) {
    const json config = job.is_object() ? job.value("config", json()) : json();
    if (!config.is_object() || config.value("model", "") != model) continue;
    const json job_modes = job.value("modes", json());
    if (!job_modes.is_object()) continue;
    for (const auto& [key, mode] : modes) {
      MeasuredRun run;
      if (RunOf(config, job_modes.value(key, json()), mode, run)) runs.push_back(run);
    }
  }
  return runs;
}

absl::StatusOr<PlanCalibration> FitPlanCalibration(const PlanInput& input,
                                                   const std::vector<MeasuredRun>& runs) {
  std::vector<CalibrationRun> by_mode[std::size(kAllPlanModes)];
  for (const MeasuredRun& run : runs) {
    if (run.sync_seconds < 0) continue;
    PlanJob job = input.job;
    if (run.batch_size > 0) job.global_batch = run.batch_size;
    job.element_bytes = run.element_bytes;
    if (run.ps_segment_bytes > 0) job.ps_segment_bytes = run.ps_segment_bytes;
    PlanCluster cluster = input.shape;
    cluster.workers = run.workers;
    cluster.shards = run.shards;
    cluster.straggler = -1;  // compare's JSON does not say whether its runs had one
    absl::StatusOr<StepPrediction> p = PredictStep(run.mode, job, cluster, input.costs);
    if (!p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", PlanModeName(run.mode), " run at N = ", run.workers, ": ", p.status().message()));
    }
    by_mode[static_cast<int>(run.mode)].push_back({p->compute_seconds, p->sync_seconds,
                                                   p->latency_seconds, run.step_seconds,
                                                   run.sync_seconds});
  }
  PlanCalibration calibration;
  for (PlanMode mode : kAllPlanModes) {
    calibration.of(mode) = FitStepCalibration(by_mode[static_cast<int>(mode)]);
  }
  if (std::all_of(std::begin(calibration.modes), std::end(calibration.modes),
                  [](const StepCalibration& c) { return c.runs == 0; })) {
    return absl::InvalidArgumentError(
        "no run with a measured step and sync of this model to calibrate from");
  }
  for (PlanMode variant : {PlanMode::kPsBackup, PlanMode::kPsStaleness}) {
    calibration.of(variant) = calibration.of(PlanMode::kPs);
  }
  return calibration;
}

}  // namespace ringside::cli
