// ScalingChart and LossOverTimeChart (declared in report_charts.h): a sweep's step time against
// the model, and both modes' loss against wall-clock time.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/format_units.h"
#include "cli/report/report_charts.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli {
namespace {

using Points = std::vector<std::pair<double, double>>;

constexpr double kWidth = 580, kHeight = 380, kLeft = 76, kRight = 24, kTop = 56, kBottom = 50;

const char* ModeColor(SyncMode mode) { return mode == SyncMode::kRing ? kRingColor : kPsColor; }

// A measured series: a line through its points and a mark on each.
void DrawMeasured(SvgCanvas& svg, const Scale& x, const Scale& y, const Points& data,
                  const char* color, const std::string& what, double radius) {
  Points pixels;
  for (const auto& [n, seconds] : data) pixels.emplace_back(x(n), y(seconds));
  if (pixels.size() > 1) svg.Curve(pixels, color, what, what);
  for (size_t i = 0; i < data.size(); ++i) {
    svg.Point(pixels[i].first, pixels[i].second, radius, color, what,
              absl::StrCat(what, " at N = ", data[i].first, ": ", HumanSeconds(data[i].second)));
  }
}

void LegendEntry(SvgCanvas& svg, double& x, const char* color, const std::string& text) {
  svg.Swatch(x, 30, color);
  svg.Text(x + 17, 40, text, "start", 11);
  x += 20 + 7.0 * static_cast<double>(text.size());
}

// Where a run's loss curve starts: its first step's start, else its first point (that step's
// end), so the chart shows training, not the cluster's start-up.
double LossOrigin(const ModeReport& mode) {
  if (mode.first_step_start_seconds > 0) return mode.first_step_start_seconds;
  return mode.loss_over_time.empty() ? 0 : mode.loss_over_time.front().seconds;
}

}  // namespace

std::string ScalingChart(const ModeReport& mode, int ps_shards, const std::string& id) {
  const std::string name(SyncModeName(mode.mode));
  const std::string title =
      mode.mode == SyncMode::kRing
          ? "ring: step time against workers, measured and modelled"
          : absl::StrCat("ps (S = ", ps_shards,
                         "): step time against workers, measured and modelled");
  SvgCanvas svg(id, kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);
  Points step, compute, sync, model;
  int low = 0, high = 0;
  double top = 0;
  for (const ScalingPoint& p : mode.scaling) {
    if (p.ps_shards != ps_shards || !p.completed) continue;
    step.emplace_back(p.workers, p.step_mean);
    compute.emplace_back(p.workers, p.phases.compute);
    sync.emplace_back(p.workers, p.phases.sync);
    low = low == 0 ? p.workers : std::min(low, p.workers);
    high = std::max(high, p.workers);
    top = std::max({top, p.step_mean, p.model_step_seconds});
  }
  if (step.empty() || !(top > 0)) {
    svg.Text(kWidth / 2, kHeight / 2, "no data: no size of the sweep completed", "middle");
    return svg.Finish();
  }
  // The model as a curve over every N between the swept ones (same formula as the points).
  for (const ScalingPoint& p : mode.scaling) {
    if (p.ps_shards == ps_shards && p.completed)
      model.emplace_back(p.workers, p.model_step_seconds);
  }
  const double right = kWidth - kRight, bottom = kHeight - kBottom;
  // log2 axis over the swept counts; one count gets a doubling either side.
  const double x_min = low == high ? low / 2.0 : low, x_max = low == high ? high * 2.0 : high;
  const Scale x{x_min, x_max, kLeft + 10, right - 10, true};
  const std::vector<double> y_ticks = LinearTicks(top * 1.1, 5);
  const Scale y{0, y_ticks.back(), bottom, kTop, false};
  for (double t : y_ticks) {
    svg.Line(kLeft, y(t), right, y(t), kGridColor);
    svg.Text(kLeft - 6, y(t) + 4, HumanSeconds(t), "end", 11);
  }
  for (const auto& [n, seconds] : step) {
    svg.Line(x(n), kTop, x(n), bottom, kGridColor);
    svg.Text(x(n), bottom + 16, absl::StrCat(static_cast<int>(n)), "middle", 11);
  }
  svg.Line(kLeft, kTop, kLeft, bottom, kInkColor);
  svg.Line(kLeft, bottom, right, bottom, kInkColor);
  svg.Text((kLeft + right) / 2, bottom + 34, "workers N (log scale); global batch fixed", "middle",
           12);
  Points model_pixels;
  for (const auto& [n, seconds] : model) model_pixels.emplace_back(x(n), y(seconds));
  if (model_pixels.size() > 1) {
    svg.Curve(model_pixels, kInkColor, "model", absl::StrCat(name, " model step time"));
  }
  for (const auto& [n, seconds] : model) {
    svg.Point(x(n), y(seconds), 3, kInkColor, "model",
              absl::StrCat("model at N = ", n, ": ", HumanSeconds(seconds)));
  }
  DrawMeasured(svg, x, y, compute, kComputeColor, "compute", 3.5);
  DrawMeasured(svg, x, y, sync, kSyncColor, "sync", 3.5);
  DrawMeasured(svg, x, y, step, ModeColor(mode.mode), "step", 5);
  double legend = kLeft;
  LegendEntry(svg, legend, ModeColor(mode.mode), "step (mean)");
  LegendEntry(svg, legend, kComputeColor, "compute");
  LegendEntry(svg, legend, kSyncColor, "sync");
  LegendEntry(svg, legend, kInkColor, "model step");
  return svg.Finish();
}

std::string LossOverTimeChart(const JobComparison& job, const std::string& id) {
  const std::string title = "Loss against wall-clock time, both modes";
  SvgCanvas svg(id, kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);
  double t_max = 0, loss_max = 0;
  // Each run's time from its own first step: the clusters started at different moments.
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    for (const LossPoint& p : mode->loss_over_time) {
      t_max = std::max(t_max, p.seconds - LossOrigin(*mode));
      loss_max = std::max(loss_max, p.loss);
    }
  }
  if (!(t_max > 0) || !(loss_max > 0)) {
    svg.Text(kWidth / 2, kHeight / 2, "no data: no step was traced", "middle");
    return svg.Finish();
  }
  svg.Text(8, 38,
           absl::StrCat("first worker's batch loss, from each run's first step (N = ",
                        job.config.workers, ")"),
           "start", 11);
  const double right = kWidth - kRight, bottom = kHeight - kBottom;
  const std::vector<double> x_ticks = LinearTicks(t_max, 6);
  const std::vector<double> y_ticks = LinearTicks(loss_max * 1.05, 5);
  const Scale x{0, x_ticks.back(), kLeft, right, false};
  const Scale y{0, y_ticks.back(), bottom, kTop, false};
  for (double t : y_ticks) {
    svg.Line(kLeft, y(t), right, y(t), kGridColor);
    svg.Text(kLeft - 6, y(t) + 4, ShortNumber(t), "end", 11);
  }
  for (double t : x_ticks) {
    svg.Line(x(t), kTop, x(t), bottom, kGridColor);
    svg.Text(x(t), bottom + 16, absl::StrCat(ShortNumber(t), " s"), "middle", 11);
  }
  svg.Line(kLeft, kTop, kLeft, bottom, kInkColor);
  svg.Line(kLeft, bottom, right, bottom, kInkColor);
  svg.Text((kLeft + right) / 2, bottom + 34, "wall-clock seconds since the first step", "middle",
           12);
  double legend = right - 150;
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    const std::string name(SyncModeName(mode->mode));
    const double origin = LossOrigin(*mode);
    Points pixels;
    for (const LossPoint& p : mode->loss_over_time) {
      pixels.emplace_back(x(p.seconds - origin), y(p.loss));
    }
    if (pixels.size() > 1) {
      svg.Curve(pixels, ModeColor(mode->mode), "loss " + name,
                absl::StrCat(name, ": loss ", ShortNumber(mode->loss_over_time.back().loss), " at ",
                             ShortNumber(mode->loss_over_time.back().seconds - origin), " s"));
    }
    LegendEntry(svg, legend, ModeColor(mode->mode), name);
  }
  return svg.Finish();
}

}  // namespace ringside::cli
