#include "common/step_calibration.h"

#include <algorithm>
#include <cmath>

namespace ringside {
namespace {

bool Usable(const CalibrationRun& run) {
  const bool finite = std::isfinite(run.predicted_compute) && std::isfinite(run.predicted_sync) &&
                      std::isfinite(run.measured_step) && std::isfinite(run.measured_sync);
  return finite && run.predicted_compute > 0 && run.predicted_sync >= 0 && run.measured_step > 0 &&
         run.measured_sync >= 0 && run.measured_sync < run.measured_step;
}

// y ≈ scale × x through the origin; 1 when every x is 0.
double ScaleThroughOrigin(const std::vector<double>& x, const std::vector<double>& y) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    xy += x[i] * y[i];
    xx += x[i] * x[i];
  }
  return xx > 0 ? xy / xx : 1;
}

void FitSync(const std::vector<double>& predicted, const std::vector<double>& measured,
             StepCalibration& fit) {
  const double n = static_cast<double>(predicted.size());
  double sx = 0, sy = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    sx += predicted[i];
    sy += measured[i];
  }
  const double mean_x = sx / n, mean_y = sy / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    sxx += (predicted[i] - mean_x) * (predicted[i] - mean_x);
    sxy += (predicted[i] - mean_x) * (measured[i] - mean_y);
  }
  if (sx == 0) {  // nothing predicted to sync: what was measured is all offset
    fit.sync_offset_seconds = mean_y;
    return;
  }
  // Relative spread: predicted syncs equal to rounding do not fix a slope.
  if (sxx > 1e-12 * mean_x * mean_x * n) {
    const double slope = sxy / sxx;
    const double offset = mean_y - slope * mean_x;
    if (slope > 0 && offset >= 0) {
      fit.sync_scale = slope;
      fit.sync_offset_seconds = offset;
      return;
    }
  }
  fit.sync_scale = ScaleThroughOrigin(predicted, measured);
}

}  // namespace

StepCalibration FitStepCalibration(const std::vector<CalibrationRun>& runs) {
  std::vector<double> predicted_compute, measured_compute, predicted_sync, measured_sync;
  for (const CalibrationRun& run : runs) {
    if (!Usable(run)) continue;
    predicted_compute.push_back(run.predicted_compute);
    measured_compute.push_back(run.measured_step - run.measured_sync);
    predicted_sync.push_back(run.predicted_sync);
    measured_sync.push_back(run.measured_sync);
  }
  StepCalibration fit;
  if (predicted_compute.empty()) return fit;
  fit.runs = static_cast<int>(predicted_compute.size());
  fit.compute_scale = ScaleThroughOrigin(predicted_compute, measured_compute);
  FitSync(predicted_sync, measured_sync, fit);
  return fit;
}

}  // namespace ringside
