// ModelCurveChart (declared in report_charts.h): the cost model's bytes per step against the
// number of workers on log-log axes, both modes, with this run's measured points.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/format_units.h"
#include "cli/report/model_prediction.h"
#include "cli/report/report_charts.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli {
namespace {

using Points = std::vector<std::pair<double, double>>;  // (workers, bytes per step)

double Pick(const ModelBytes& model, ModelQuantity quantity) {
  return quantity == ModelQuantity::kPerWorker ? model.per_worker : model.busiest_node;
}

double Measured(const ModeReport& mode, ModelQuantity quantity) {
  if (!mode.completed) return 0;
  return quantity == ModelQuantity::kPerWorker ? mode.bytes_per_worker_per_step
                                               : mode.busiest_node_bytes_per_step;
}

Points ModelCurve(const JobConfig& c, SyncMode mode, ModelQuantity quantity) {
  Points points;
  for (int n : WorkerCountsForCurve(kModelMaxWorkers)) {
    const ModelBytes model =
        PredictBytesPerStep(mode, c.parameters, n, c.ps_shards, c.element_bytes);
    points.emplace_back(n, Pick(model, quantity));
  }
  return points;
}

// The plotting area in pixels and its two log scales.
// One mode: its model curve and the run's measured value (0 when not measured).
struct Series {
  SyncMode mode;
  Points model;
  double measured;
};

const char* Color(SyncMode mode) { return mode == SyncMode::kRing ? kRingColor : kPsColor; }

void DrawAxes(SvgCanvas& svg, const ChartFrame& f, int workers) {
  DrawWorkersAxes(svg, f, 2, kModelMaxWorkers, 10, [](double bytes) { return HumanBytes(bytes); });
  if (workers >= 2 && workers <= kModelMaxWorkers) {
    svg.Line(f.x(workers), f.top, f.x(workers), f.bottom, kInkColor, /*dashed=*/true);
    svg.Text(f.x(workers) + 4, f.top + 12, absl::StrCat("this run: N = ", workers), "start", 11);
  }
}

void DrawSeries(SvgCanvas& svg, const ChartFrame& f, const Series& series, const JobConfig& c,
                ModelQuantity quantity) {
  const std::string name(SyncModeName(series.mode));
  Points pixels;
  for (const auto& [n, bytes] : series.model) {
    if (bytes > 0) pixels.emplace_back(f.x(n), f.y(bytes));
  }
  if (pixels.empty()) return;  // e.g. no shards configured: no ps model to draw
  svg.Curve(pixels, Color(series.mode), absl::StrCat("model ", name),
            absl::StrCat(name, " model, bytes ",
                         quantity == ModelQuantity::kPerWorker ? "per worker" : "busiest node"));
  if (!(series.measured > 0) || c.workers < 2) return;
  const ModelBytes model =
      PredictBytesPerStep(series.mode, c.parameters, c.workers, c.ps_shards, c.element_bytes);
  svg.Point(f.x(c.workers), f.y(series.measured), 5.5, Color(series.mode),
            absl::StrCat("measured ", name),
            absl::StrCat(name, " measured at N = ", c.workers, ": ", HumanBytes(series.measured),
                         " (model ", HumanBytes(Pick(model, quantity)), ")"));
}

void DrawLegend(SvgCanvas& svg, double x) {
  for (SyncMode mode : {SyncMode::kRing, SyncMode::kPs}) {
    svg.Swatch(x, 28, Color(mode));
    svg.Text(x + 17, 38, absl::StrCat(SyncModeName(mode), " (model)"), "start", 11);
    x += 100;
  }
  svg.Text(x, 38, "\u25cf measured", "start", 11);
}

}  // namespace

std::string ModelCurveChart(const JobComparison& job, ModelQuantity quantity,
                            const std::string& id) {
  constexpr double kWidth = 580, kHeight = 380, kLeft = 84, kRight = 24, kTop = 52, kBottom = 50;
  const JobConfig& c = job.config;
  const std::string title = quantity == ModelQuantity::kPerWorker
                                ? "Model: bytes one worker sends per step, N = 2..1024"
                                : "Model: bytes into the busiest node per step, N = 2..1024";
  SvgCanvas svg(id, kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);

  const Series series[] = {
      {SyncMode::kRing, ModelCurve(c, SyncMode::kRing, quantity), Measured(job.ring, quantity)},
      {SyncMode::kPs, ModelCurve(c, SyncMode::kPs, quantity), Measured(job.ps, quantity)}};
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (const Series& s : series) {
    for (const auto& [n, bytes] : s.model) {
      if (bytes > 0) low = std::min(low, bytes), high = std::max(high, bytes);
    }
    if (s.measured > 0) low = std::min(low, s.measured), high = std::max(high, s.measured);
  }
  if (!(high > 0)) {
    svg.Text(kWidth / 2, kHeight / 2, "no data: the job has no parameters", "middle");
    return svg.Finish();
  }
  // Whole powers of two around the data, with room so flat curves do not sit on the frame.
  const double y_min = std::exp2(std::floor(std::log2(low / 1.4)));
  const double y_max = std::exp2(std::ceil(std::log2(high * 1.4)));
  const double bottom = kHeight - kBottom, right = kWidth - kRight;
  const ChartFrame frame{kLeft,
                         kTop,
                         right,
                         bottom,
                         Scale{2, kModelMaxWorkers, kLeft, right, true},
                         Scale{y_min, y_max, bottom, kTop, true}};
  svg.Text(8, 38,
           absl::StrCat("K = ", WithThousands(c.parameters), ", S = ", c.ps_shards,
                        " shards; log-log axes"),
           "start", 11);
  DrawAxes(svg, frame, c.workers);
  for (const Series& s : series) DrawSeries(svg, frame, s, c, quantity);
  DrawLegend(svg, right - 280);
  return svg.Finish();
}

}  // namespace ringside::cli
