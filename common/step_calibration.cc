#include "common/step_calibration.h"

#include <cmath>

namespace ringside {
namespace {

bool Usable(const CalibrationRun& run) {
  const bool finite = std::isfinite(run.predicted_compute) && std::isfinite(run.predicted_sync) &&
                      std::isfinite(run.predicted_latency) && std::isfinite(run.measured_step) &&
                      std::isfinite(run.measured_sync);
  return finite && run.predicted_compute > 0 && run.predicted_latency >= 0 &&
         run.predicted_sync >= run.predicted_latency && run.measured_step > 0 &&
         run.measured_sync >= 0 && run.measured_sync < run.measured_step;
}

// The sums of the sync's normal equations: x the bandwidth part, y the latency part, m measured.
struct SyncSums {
  double xx = 0, xy = 0, yy = 0, xm = 0, ym = 0;
};

void FitSync(const SyncSums& s, StepCalibration& fit) {
  const double det = s.xx * s.yy - s.xy * s.xy;
  if (det > 1e-9 * s.xx * s.yy) {  // the runs tell the two parts apart
    const double bandwidth = (s.xm * s.yy - s.ym * s.xy) / det;
    const double latency = (s.ym * s.xx - s.xm * s.xy) / det;
    if (bandwidth > 0 && latency > 0) {
      fit.bandwidth_scale = bandwidth;
      fit.latency_scale = latency;
      return;
    }
  }
  if (s.xx > 0) {
    const double bandwidth = (s.xm - s.xy) / s.xx;  // the latency as modelled: m − y ≈ scale × x
    if (bandwidth > 0) fit.bandwidth_scale = bandwidth;
  } else if (s.yy > 0 && s.ym > 0) {  // no bandwidth part: the latency is the whole sync
    fit.latency_scale = s.ym / s.yy;
  }
}

}  // namespace

StepCalibration FitStepCalibration(const std::vector<CalibrationRun>& runs) {
  StepCalibration fit;
  double cc = 0, cm = 0;  // compute: predicted², predicted × measured
  SyncSums sync;
  for (const CalibrationRun& run : runs) {
    if (!Usable(run)) continue;
    ++fit.runs;
    const double measured_compute = run.measured_step - run.measured_sync;
    cc += run.predicted_compute * run.predicted_compute;
    cm += run.predicted_compute * measured_compute;
    const double x = run.predicted_sync - run.predicted_latency, y = run.predicted_latency;
    sync.xx += x * x;
    sync.xy += x * y;
    sync.yy += y * y;
    sync.xm += x * run.measured_sync;
    sync.ym += y * run.measured_sync;
  }
  if (fit.runs == 0) return fit;
  fit.compute_scale = cm / cc;
  FitSync(sync, fit);
  return fit;
}

}  // namespace ringside
