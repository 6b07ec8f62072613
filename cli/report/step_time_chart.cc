// StepTimeChart (declared in report_charts.h): how each run's steady step time spreads, the
// figure the verdict turns on: the 5th to 95th percentile of worker-0's steps (warm-up left
// out), the median, and with --repeats every repeat's median as a point.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "cli/report/repeats.h"
#include "cli/report/report_charts.h"
#include "cli/report/step_figures.h"
#include "cli/report/svg_chart.h"
#include "cli/report/verdict.h"

namespace ringside::cli {
namespace {

constexpr double kLeft = 78, kRight = 24, kTop = 56, kPlotHeight = 240, kBottom = 64, kSlot = 130;

const char* RunColor(const ModeReport& run) {
  return run.mode == SyncMode::kRing ? kRingColor : kPsColor;
}

// The largest value the chart must show for `run`.
double Highest(const ModeReport& run) {
  double top = std::max(run.step_p50, Percentile(run.step_seconds, 0.95));
  for (const ModeReport* r : RunsOf(run)) top = std::max(top, r->step_p50);
  return top;
}

void DrawRun(SvgCanvas& svg, const Scale& y, const ModeReport& run, double center) {
  const std::string name = RunName(run);
  const char* color = RunColor(run);
  if (!run.step_seconds.empty()) {
    const double low = Percentile(run.step_seconds, 0.05);
    const double high = Percentile(run.step_seconds, 0.95);
    svg.Curve({{center, y(low)}, {center, y(high)}}, color, "step-spread " + name,
              absl::StrCat(name, ": 5th\u201395th percentile of ", run.step_seconds.size(),
                           " steps ", HumanSeconds(low), "\u2013", HumanSeconds(high)));
    svg.Line(center - 8, y(low), center + 8, y(low), color);
    svg.Line(center - 8, y(high), center + 8, y(high), color);
  }
  svg.Bar(center - 22, y(run.step_p50) - 1.5, 44, 3, color, "step-median " + name,
          absl::StrCat(name, ": median step ", HumanSeconds(run.step_p50)));
  svg.Text(center + 26, y(run.step_p50) + 4, HumanSeconds(run.step_p50), "start", 11, false,
           "bar-value");
  const std::vector<const ModeReport*> runs = RunsOf(run);
  if (runs.size() < 2) return;
  for (size_t i = 0; i < runs.size(); ++i) {
    const double dx = (static_cast<double>(i) - (runs.size() - 1) / 2.0) * 5;
    svg.Point(
        center - 34 + dx, y(runs[i]->step_p50), 3, color, "repeat " + name,
        absl::StrCat(name, ", repeat ", i + 1, ": median step ", HumanSeconds(runs[i]->step_p50)));
  }
}

}  // namespace

std::string StepTimeChart(const JobComparison& job, const std::string& id) {
  const std::vector<const ModeReport*> runs = JobRuns(job);
  const double width = kLeft + kSlot * static_cast<double>(runs.size()) + kRight;
  const double plot_bottom = kTop + kPlotHeight, height = plot_bottom + kBottom;
  const std::string title = "Steady step time, and how it spreads";
  SvgCanvas svg(id, width, height, title);
  svg.Text(8, 18, title, "start", 14, true);
  double max = 0;
  for (const ModeReport* run : runs) {
    if (run->completed) max = std::max(max, Highest(*run));
  }
  if (!(max > 0)) {
    svg.Text(width / 2, height / 2, "no data: no mode completed", "middle");
    return svg.Finish();
  }
  svg.Text(8, 34,
           job.config.repeats >= 2
               ? "worker-0's steps after warm-up: median, 5th\u201395th percentile; dots: each "
                 "repeat's median"
               : "worker-0's steps after warm-up: median and 5th\u201395th percentile",
           "start", 11);
  const std::vector<double> ticks = LinearTicks(max * 1.1, 5);
  const Scale y{0, ticks.back(), plot_bottom, kTop};
  const double plot_right = width - kRight;
  for (double tick : ticks) {
    svg.Line(kLeft, y(tick), plot_right, y(tick), kGridColor);
    svg.Text(kLeft - 6, y(tick) + 4, HumanSeconds(tick), "end", 11);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const double center = kLeft + kSlot * (static_cast<double>(i) + 0.5);
    svg.Text(center, plot_bottom + 18, RunName(*runs[i]), "middle", 13, true, "run-label");
    if (runs[i]->completed) DrawRun(svg, y, *runs[i], center);
  }
  svg.Line(kLeft, kTop, kLeft, plot_bottom, kInkColor);
  svg.Line(kLeft, plot_bottom, plot_right, plot_bottom, kInkColor);
  const Verdict verdict = DecideWinner(job);
  if (verdict.basis == "step_seconds" && verdict.interval.valid) {
    svg.Text(8, plot_bottom + 44,
             absl::StrCat("ps \u00f7 ring ", ShortNumber(verdict.interval.ratio), " (",
                          ShortNumber(verdict.interval.low), "\u2013",
                          ShortNumber(verdict.interval.high), ", 95%, over ",
                          verdict.over == IntervalOver::kRepeats ? "repeats" : "steps", ")"),
             "start", 11, false, "interval");
  }
  return svg.Finish();
}

}  // namespace ringside::cli
