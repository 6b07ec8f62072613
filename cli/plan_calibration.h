// `ringside plan --calibrate` and `--measured`: the runs of `ringside compare` and `lab` --json
// files (each job's ring, ps and colocated ps at its final world), and the step model's correction
// fitted to them (common/step_calibration.h). Reading checks every file; the fit is pure.
#ifndef RINGSIDE_CLI_PLAN_CALIBRATION_H_
#define RINGSIDE_CLI_PLAN_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/plan_report.h"
#include "common/step_model.h"

namespace ringside::cli {

// One mode's run of a job in a compare or lab JSON file.
struct MeasuredRun {
  PlanMode mode = PlanMode::kRing;  // ring, ps or ps-colocated
  int workers = 0;                  // the run's final world
  int shards = 0;                   // its S (colocated: N)
  int64_t batch_size = 0;           // the job's global batch
  int element_bytes = 4;            // its wire dtype's
  double step_seconds = 0;          // the median step
  double sync_seconds = -1;         // the median sync; -1: not in the file
  uint64_t ps_segment_bytes = 0;    // its workers' push segment; 0: not in the file (plan's)
};

// The runs of `model` in the compare --json file at `path`, given with `flag` (named in errors:
// an unreadable file, one that is not compare's JSON). Runs of other models are left out, and a
// run without a step median.
absl::StatusOr<std::vector<MeasuredRun>> ReadMeasuredRuns(absl::string_view flag,
                                                          const std::string& path,
                                                          const std::string& model);

// Each mode's correction from the runs with a sync median, predicted (uncalibrated) with input's
// costs and job at the run's N, S, batch and wire dtype, without a straggler. The PS variants,
// never run by compare, take synchronous ps's. INVALID_ARGUMENT when no run has a sync median to
// fit.
absl::StatusOr<PlanCalibration> FitPlanCalibration(const PlanInput& input,
                                                   const std::vector<MeasuredRun>& runs);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_PLAN_CALIBRATION_H_
