#include "cli/report/step_figures.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringside::cli {
namespace {

// The first worker's loss at every step, against seconds since the cluster was started,
// thinned evenly to at most kMaxLossPoints (the last step always kept).
std::vector<LossPoint> LossOverTime(const StepTrace& trace, double origin) {
  std::vector<LossPoint> points;
  for (const StepTraceLine& line : trace.lines) {
    if (line.unix_seconds > 0) points.push_back({line.unix_seconds - origin, line.step, line.loss});
  }
  if (points.size() <= kMaxLossPoints) return points;
  std::vector<LossPoint> thinned;
  const double stride = static_cast<double>(points.size() - 1) / (kMaxLossPoints - 1);
  for (size_t i = 0; i < kMaxLossPoints; ++i) {
    thinned.push_back(points[static_cast<size_t>(std::lround(i * stride))]);
  }
  return thinned;
}

// When the first timed step began (its end less its length), on the same clock; 0: untimed.
double FirstStepStart(const StepTrace& trace, double origin) {
  for (const StepTraceLine& line : trace.lines) {
    if (line.unix_seconds > 0) return std::max(0.0, line.unix_seconds - line.seconds - origin);
  }
  return 0;
}

double Mean(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return values.empty() ? 0 : total / static_cast<double>(values.size());
}

}  // namespace

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5))];
}

void FillStepFigures(const StepTrace& trace, const std::string& worker, int64_t batch_size,
                     double cluster_start_unix_seconds, ModeReport& report) {
  std::vector<double> seconds, compute, sync, update, overlap_shares;
  const size_t warmup =
      trace.lines.size() > 2 * kWarmupSteps ? static_cast<size_t>(kWarmupSteps) : 0;
  report.warmup_steps = static_cast<int64_t>(warmup);
  report.warmup_seconds = 0;
  for (size_t i = 0; i < warmup; ++i) report.warmup_seconds += trace.lines[i].seconds;
  for (size_t i = warmup; i < trace.lines.size(); ++i) {
    const StepTraceLine& line = trace.lines[i];
    seconds.push_back(line.seconds);
    compute.push_back(line.compute_seconds);
    sync.push_back(line.sync_seconds);
    update.push_back(line.update_seconds);
    overlap_shares.push_back(line.seconds > 0 ? line.overlap_seconds / line.seconds : 0.0);
  }
  if (trace.unreadable > 0) {
    report.events.push_back(absl::StrCat(worker, "'s step trace had ", trace.unreadable,
                                         " unreadable lines; they are left out"));
  }
  report.loss_over_time = LossOverTime(trace, cluster_start_unix_seconds);
  report.first_step_start_seconds = FirstStepStart(trace, cluster_start_unix_seconds);
  report.step_seconds = seconds;
  report.step_p50 = Percentile(seconds, 0.5);
  report.step_p95 = Percentile(seconds, 0.95);
  report.sync_p50 = Percentile(sync, 0.5);
  report.sync_min = Percentile(sync, 0);
  report.compute_p50 = Percentile(compute, 0.5);
  report.overlap_share = Percentile(overlap_shares, 0.5);
  double total = 0;
  for (double s : seconds) total += s;
  if (total > 0) {
    report.samples_per_second = static_cast<double>(batch_size) * seconds.size() / total;
  }
  report.phases = PhaseSeconds{Mean(compute), Mean(sync), Mean(update)};
  const double phase_total = report.phases.compute + report.phases.sync + report.phases.update;
  report.sync_share = phase_total > 0 ? report.phases.sync / phase_total : 0;
}

}  // namespace ringside::cli
