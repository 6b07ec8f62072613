// The step model's correction from measured runs (`ringside plan --calibrate`): where the model
// of docs/architecture.md ("The step-time model") misses what this cluster does, runs of the same
// job at a few sizes say by how much, and the plan for other sizes carries that correction. Per
// mode, the measured compute (a step less its sync) is fitted as a multiple of the predicted
// compute, and the measured sync as a multiple of the sync's bandwidth part (wire, CPU, shard)
// plus a multiple of its latency part (rounds × α): a round's real cost (a call's overhead, a
// thread's wake-up, a shaped link's burst) is what the probe's α misses most on small steps, and
// it grows with the ring's 2(N−1) rounds where the bandwidth part does not. Pure; thread-safe.
#ifndef RINGSIDE_COMMON_STEP_CALIBRATION_H_
#define RINGSIDE_COMMON_STEP_CALIBRATION_H_

#include <cstddef>
#include <vector>

namespace ringside {

// One measured run beside the model's uncalibrated prediction for it (seconds per step).
struct CalibrationRun {
  double predicted_compute = 0;  // > 0
  double predicted_sync = 0;     // >= predicted_latency
  double predicted_latency = 0;  // the sync's rounds × α, >= 0
  double measured_step = 0;      // the run's median step, > 0
  double measured_sync = 0;      // the run's median sync, >= 0 and below the step
};

// One mode's correction; the default is none.
struct StepCalibration {
  int runs = 0;                // the runs it was fitted to; 0: the identity
  double compute_scale = 1;    // measured compute ≈ compute_scale × predicted
  double bandwidth_scale = 1;  // of the wire, CPU and shard terms
  double latency_scale = 1;    // of the latency term
};

// Least squares over `runs` (those with a figure out of range left out; none left: the identity).
// The compute through the origin. The sync's two scales together where the runs tell them apart
// and both come out positive; else the latency kept as modelled and the bandwidth scale fitted
// alone (or, with no bandwidth part, the latency scale alone).
StepCalibration FitStepCalibration(const std::vector<CalibrationRun>& runs);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STEP_CALIBRATION_H_
