// PlanChartSvg (cli/plan_report.h): the step model's step time against N on log-log axes, one
// curve per mode, with measured steps as points.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/plan_report.h"
#include "cli/report/format_units.h"
#include "cli/report/model_prediction.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli {
namespace {

constexpr int kMaxWorkers = 1024;
constexpr const char* kColors[] = {kRingColor, kPsColor, "#2ca02c", "#9467bd", "#8c564b"};

using Points = std::vector<std::pair<double, double>>;  // (N, step seconds)

Points Curve(const PlanInput& input, PlanMode mode) {
  std::vector<int> counts = {1};
  for (int n : WorkerCountsForCurve(kMaxWorkers)) counts.push_back(n);
  Points points;
  for (int n : counts) {
    PlanCluster shape = input.shape;
    shape.workers = n;
    shape.shards = input.shard_counts.empty() ? 1 : input.shard_counts.front();
    if (shape.straggler >= n) shape.straggler = -1;  // the straggler's worker is not there yet
    PlanJob job = input.job;
    job.global_batch = std::max<int64_t>(job.global_batch, n);
    absl::StatusOr<StepPrediction> p =
        PredictStep(mode, job, shape, input.costs, input.calibration);
    if (p.ok() && p->step_seconds > 0) points.emplace_back(n, p->step_seconds);
  }
  return points;
}

}  // namespace

std::string PlanChartSvg(const PlanInput& input, const std::vector<MeasuredStep>& measured) {
  constexpr double kWidth = 640, kHeight = 400, kLeft = 84, kRight = 24, kTop = 56, kBottom = 50;
  const std::string title = "Predicted step time against N, per mode (points: measured)";
  SvgCanvas svg("plan-step-time", kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);
  std::vector<std::pair<PlanMode, Points>> curves;
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (PlanMode mode : kAllPlanModes) {
    curves.emplace_back(mode, Curve(input, mode));
    for (const auto& [n, s] : curves.back().second)
      low = std::min(low, s), high = std::max(high, s);
  }
  for (const MeasuredStep& m : measured) {
    if (m.step_seconds > 0)
      low = std::min(low, m.step_seconds), high = std::max(high, m.step_seconds);
  }
  if (!(high > 0)) return svg.Finish();
  const ChartFrame f{kLeft,
                     kTop,
                     kWidth - kRight,
                     kHeight - kBottom,
                     Scale{1, kMaxWorkers, kLeft, kWidth - kRight, true},
                     Scale{low / 1.5, high * 1.5, kHeight - kBottom, kTop, true}};
  DrawWorkersAxes(svg, f, 1, kMaxWorkers, 11, [](double s) { return HumanSeconds(s); });
  double legend_x = kLeft;
  for (const auto& [mode, points] : curves) {
    const char* color = kColors[static_cast<int>(mode)];
    const std::string name(PlanModeName(mode));
    Points pixels;
    for (const auto& [n, s] : points) pixels.emplace_back(f.x(n), f.y(s));
    if (!pixels.empty()) svg.Curve(pixels, color, "model " + name, name + " predicted step");
    svg.Swatch(legend_x, 30, color);
    svg.Text(legend_x + 17, 40, name, "start", 11);
    legend_x += 100;
    for (const MeasuredStep& m : measured) {
      if (m.mode != name || !(m.step_seconds > 0) || m.workers < 1) continue;
      svg.Point(
          f.x(m.workers), f.y(m.step_seconds), 5, color, "measured " + name,
          absl::StrCat(name, " measured at N = ", m.workers, ": ", HumanSeconds(m.step_seconds)));
    }
  }
  return svg.Finish();
}

}  // namespace ringside::cli
