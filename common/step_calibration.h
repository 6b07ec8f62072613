// The step model's correction from measured runs (`ringside plan --calibrate`): where the model
// of docs/architecture.md ("The step-time model") misses what this cluster does, runs of the same
// job at a few sizes say by how much, and the plan for other sizes carries that correction. Per
// mode, the measured compute (a step less its sync) is fitted as a multiple of the predicted
// compute, and the measured sync as an affine function of the predicted sync: its slope scales
// the terms the model has, its offset (never negative) is the per-step cost it has no term for
// (a call's fixed overhead, a thread's wake-up), which is what the model misses on small steps.
// Pure; thread-safe.
#ifndef RINGSIDE_COMMON_STEP_CALIBRATION_H_
#define RINGSIDE_COMMON_STEP_CALIBRATION_H_

#include <cstddef>
#include <vector>

namespace ringside {

// One measured run beside the model's uncalibrated prediction for it (seconds per step).
struct CalibrationRun {
  double predicted_compute = 0;  // > 0
  double predicted_sync = 0;     // >= 0
  double measured_step = 0;      // the run's median step, > 0
  double measured_sync = 0;      // the run's median sync, >= 0 and below the step
};

// One mode's correction; the default is none.
struct StepCalibration {
  int runs = 0;              // the runs it was fitted to; 0: the identity
  double compute_scale = 1;  // measured compute ≈ compute_scale × predicted
  double sync_scale = 1;     // measured sync ≈ sync_scale × predicted + sync_offset_seconds
  double sync_offset_seconds = 0;  // >= 0
  double CalibratedCompute(double predicted) const { return compute_scale * predicted; }
  double CalibratedSync(double predicted) const {
    return sync_scale * predicted + sync_offset_seconds;
  }
};

// Least squares over `runs` (those with a figure out of range left out; none left: the identity).
// The compute through the origin. The sync affine where the runs' predicted syncs differ and the
// fitted offset is not negative, else through the origin; a sync predicted as 0 everywhere keeps
// the slope 1 and takes the measured mean as its offset.
StepCalibration FitStepCalibration(const std::vector<CalibrationRun>& runs);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STEP_CALIBRATION_H_
