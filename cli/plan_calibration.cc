#include "cli/plan_calibration.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace ringside::cli {
namespace {

using nlohmann::json;

// A number in `object[key]`, or `fallback`.
double NumberAt(const json& object, const char* key, double fallback) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return fallback;
  return object[key].get<double>();
}

// The mode object's run, if it has a step median and a final world.
bool RunOf(const json& config, const json& m, PlanMode mode, MeasuredRun& run) {
  if (!m.is_object()) return false;
  const json step = m.value("step_seconds", json::object());
  const json world = m.value("final_world", json());
  if (!step.is_object() || !step.value("p50", json()).is_number() || !world.is_number_integer() ||
      world.get<int>() < 1) {
    return false;
  }
  run.mode = mode;
  run.workers = world.get<int>();
  run.shards = mode == PlanMode::kColocatedPs
                   ? run.workers
                   : std::max(1, static_cast<int>(NumberAt(config, "ps_shards", 1)));
  run.batch_size = static_cast<int64_t>(NumberAt(config, "batch_size", 0));
  run.element_bytes = static_cast<int>(NumberAt(config, "element_bytes", 4));
  run.step_seconds = step["p50"].get<double>();
  run.sync_seconds = NumberAt(m.value("sync_seconds", json::object()), "p50", -1);
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
