// AccuracyOverTimeChart (declared in report_charts.h): every run's test accuracy against
// wall-clock time (the ring and the PS, or the ring and each --ps_variants variant), the target
// accuracy across, and where each run first reached it.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "cli/report/repeats.h"
#include "cli/report/report_charts.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli {
namespace {

constexpr double kWidth = 580, kHeight = 380, kLeft = 64, kRight = 24, kTop = 56, kBottom = 50;

// The ring's and the PS's colours as everywhere in the report, then one per further variant.
const char* RunColor(size_t run) {
  static constexpr const char* kColors[] = {kRingColor, kPsColor,  "#2ca02c", "#9467bd",
                                            "#8c564b",  "#e377c2", "#17becf", "#bcbd22"};
  return kColors[run % (sizeof(kColors) / sizeof(kColors[0]))];
}

// Run `run`'s evaluations: a line through them, a mark on each, and a dashed drop line where it
// first reached the target, labelled on a line of its own.
void DrawRun(SvgCanvas& svg, const Scale& x, const Scale& y, const ModeReport& mode, size_t run,
             const std::string& target, double target_accuracy) {
  const std::string name = RunName(mode);
  const char* color = RunColor(run);
  std::vector<std::pair<double, double>> pixels;
  for (const AccuracyPoint& p : mode.accuracy_over_time) {
    pixels.emplace_back(x(p.seconds), y(p.test_accuracy));
  }
  if (pixels.size() > 1) {
    svg.Curve(pixels, color, "accuracy " + name,
              absl::StrCat(name, ": test accuracy ",
                           Percent(mode.accuracy_over_time.back().test_accuracy), " at ",
                           HumanSeconds(mode.accuracy_over_time.back().seconds)));
  }
  for (size_t i = 0; i < pixels.size(); ++i) {
    const AccuracyPoint& p = mode.accuracy_over_time[i];
    svg.Point(pixels[i].first, pixels[i].second, 2.5, color, "evaluation " + name,
              absl::StrCat(name, ": ", Percent(p.test_accuracy), " test accuracy at ",
                           HumanSeconds(p.seconds), " (step ", WithThousands(p.step),
                           ", training loss ", ShortNumber(p.loss), ")"));
  }
  std::vector<double> reached;
  for (const ModeReport* r : RunsOf(mode)) {
    if (r->seconds_to_target.has_value()) reached.push_back(*r->seconds_to_target);
  }
  if (reached.size() >= 2) {  // --repeats: the time to target's range over the runs
    const Spread spread = SpreadOf(reached);
    const double at = y(target_accuracy) + 4 + 4 * static_cast<double>(run);
    svg.Curve({{x(spread.min), at}, {x(spread.max), at}}, color, "target-spread " + name,
              absl::StrCat(name, ": time to ", target, " over ", spread.count, " repeats ",
                           HumanSeconds(spread.min), "\u2013", HumanSeconds(spread.max)));
    svg.Line(x(spread.min), at - 4, x(spread.min), at + 4, color);
    svg.Line(x(spread.max), at - 4, x(spread.max), at + 4, color);
  }
  if (mode.seconds_to_target.has_value()) {
    const double at = x(*mode.seconds_to_target);
    svg.Line(at, y(0), at, y(1), color, /*dashed=*/true);
    svg.Text(at + 3, y(1) + 12 + 14 * static_cast<double>(run),
             absl::StrCat(name, " ", target, " at ", HumanSeconds(*mode.seconds_to_target)),
             "start", 10);
  }
}

}  // namespace

std::string AccuracyOverTimeChart(const JobComparison& job, const std::string& id) {
  const std::string title = job.ps_variants.empty()
                                ? "Test accuracy against wall-clock time, both modes"
                                : "Test accuracy against wall-clock time, every run";
  const std::vector<const ModeReport*> runs = JobRuns(job);
  SvgCanvas svg(id, kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);
  double t_max = 0;
  for (const ModeReport* run : runs) {
    // Every repeat's evaluations: the time to target's range must fit too.
    for (const ModeReport* r : RunsOf(*run)) {
      for (const AccuracyPoint& p : r->accuracy_over_time) t_max = std::max(t_max, p.seconds);
    }
  }
  if (!(t_max > 0)) {
    svg.Text(kWidth / 2, kHeight / 2,
             job.config.has_test_set ? "no data: no evaluation was recorded"
                                     : "no data: this data set has no held-out test set",
             "middle");
    return svg.Finish();
  }
  const std::string target = TargetText(job.config);
  svg.Text(8, 38,
           absl::StrCat("worker-0's evaluations on the test set; seconds since the cluster's "
                        "first step; target ",
                        target),
           "start", 11);
  const double right = kWidth - kRight, bottom = kHeight - kBottom;
  const std::vector<double> x_ticks = LinearTicks(t_max, 6);
  const Scale x{0, x_ticks.back(), kLeft, right, false};
  const Scale y{0, 1, bottom, kTop, false};
  for (int i = 0; i <= 5; ++i) {
    const double share = i / 5.0;
    svg.Line(kLeft, y(share), right, y(share), kGridColor);
    svg.Text(kLeft - 6, y(share) + 4, absl::StrCat(i * 20, "%"), "end", 11);
  }
  for (double t : x_ticks) {
    svg.Line(x(t), kTop, x(t), bottom, kGridColor);
    svg.Text(x(t), bottom + 16, absl::StrCat(ShortNumber(t), " s"), "middle", 11);
  }
  svg.Line(kLeft, kTop, kLeft, bottom, kInkColor);
  svg.Line(kLeft, bottom, right, bottom, kInkColor);
  svg.Text((kLeft + right) / 2, bottom + 34, "wall-clock seconds since the first step", "middle",
           12);
  // The target across the plot.
  svg.Line(kLeft, y(job.config.target_accuracy), right, y(job.config.target_accuracy), kInkColor,
           /*dashed=*/true);
  svg.Text(right - 4, y(job.config.target_accuracy) - 5, "target " + target, "end", 11);
  for (size_t i = 0; i < runs.size(); ++i)
    DrawRun(svg, x, y, *runs[i], i, target, job.config.target_accuracy);
  // Bottom right, one run a line upwards: where accuracy curves, rising from the bottom left,
  // leave room.
  for (size_t i = 0; i < runs.size(); ++i) {
    const double line = bottom - 22 - 16 * static_cast<double>(runs.size() - 1 - i);
    svg.Swatch(right - 150, line, RunColor(i));
    svg.Text(right - 133, line + 10, RunName(*runs[i]), "start", 11);
  }
  return svg.Finish();
}

}  // namespace ringside::cli
