// AccuracyOverTimeChart and AccuracyOverBytesChart (declared in report_charts.h): every run's
// test accuracy against wall-clock time or against the bytes one worker sent (the ring and the
// PS, each --ps_variants variant, each --compression_variants run), the target accuracy across,
// and where each run first reached it. One chart, two x axes: an Axis says what x is.
#include <algorithm>
#include <optional>
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

// What the x axis is: a point's x (unset: the point is not drawn), a run's x at the target, how
// an x value reads, its ticks, and the chart's words.
struct Axis {
  std::optional<double> (*of_point)(const AccuracyPoint&);
  std::optional<double> (*to_target)(const ModeReport&);
  std::string (*text)(double);
  std::vector<double> (*ticks)(double max, int target);
  std::string (*tick_text)(double);
  const char* what;      // "time", "bytes": the "time to 75%" label
  const char* subtitle;  // what the points are, before "; target 75%"
  const char* label;     // under the axis
  const char* no_data;   // where no point has an x
};

std::optional<double> PointSeconds(const AccuracyPoint& p) { return p.seconds; }
std::optional<double> SecondsToTarget(const ModeReport& m) { return m.seconds_to_target; }
std::string SecondsText(double seconds) { return absl::StrCat(ShortNumber(seconds), " s"); }

std::optional<double> PointBytes(const AccuracyPoint& p) {
  if (!p.sent_bytes.has_value()) return std::nullopt;
  return static_cast<double>(*p.sent_bytes);
}
std::optional<double> BytesToTarget(const ModeReport& m) {
  if (!m.bytes_to_target.has_value()) return std::nullopt;
  return static_cast<double>(*m.bytes_to_target);
}

constexpr Axis kTimeAxis = {&PointSeconds,
                            &SecondsToTarget,
                            &HumanSeconds,
                            &LinearTicks,
                            &SecondsText,
                            "time",
                            "worker-0's evaluations on the test set; seconds since the cluster's "
                            "first step",
                            "wall-clock seconds since the first step",
                            "no data: no evaluation was recorded"};
constexpr Axis kBytesAxis = {&PointBytes,
                             &BytesToTarget,
                             &HumanBytes,
                             &ByteTicks,
                             &HumanBytes,
                             "bytes",
                             "worker-0's evaluations on the test set; payload bytes the "
                             "evaluating worker had sent",
                             "bytes sent by one worker (its links' payload, since the start)",
                             "no data: no evaluation recorded the bytes sent"};

// The ring's and the PS's colours as everywhere in the report, then one per further variant.
const char* RunColor(size_t run) {
  static constexpr const char* kColors[] = {kRingColor, kPsColor,  "#2ca02c", "#9467bd",
                                            "#8c564b",  "#e377c2", "#17becf", "#bcbd22"};
  return kColors[run % (sizeof(kColors) / sizeof(kColors[0]))];
}

// The spread of a run's x at the target over its repeats, drawn as a bar under the target line.
void DrawTargetSpread(SvgCanvas& svg, const Axis& axis, const Scale& x, const Scale& y,
                      const ModeReport& mode, size_t run, const std::string& target,
                      double target_accuracy) {
  std::vector<double> reached;
  for (const ModeReport* r : RunsOf(mode)) {
    if (const std::optional<double> at = axis.to_target(*r)) reached.push_back(*at);
  }
  if (reached.size() < 2) return;
  const std::string name = RunName(mode);
  const char* color = RunColor(run);
  const Spread spread = SpreadOf(reached);
  const double at = y(target_accuracy) + 4 + 4 * static_cast<double>(run);
  svg.Curve({{x(spread.min), at}, {x(spread.max), at}}, color, "target-spread " + name,
            absl::StrCat(name, ": ", axis.what, " to ", target, " over ", spread.count, " repeats ",
                         axis.text(spread.min), "\u2013", axis.text(spread.max)));
  svg.Line(x(spread.min), at - 4, x(spread.min), at + 4, color);
  svg.Line(x(spread.max), at - 4, x(spread.max), at + 4, color);
}

// Run `run`'s evaluations: a line through them, a mark on each, and a dashed drop line where it
// first reached the target, labelled on a line of its own.
void DrawRun(SvgCanvas& svg, const Axis& axis, const Scale& x, const Scale& y,
             const ModeReport& mode, size_t run, const std::string& target,
             double target_accuracy) {
  const std::string name = RunName(mode);
  const char* color = RunColor(run);
  std::vector<const AccuracyPoint*> drawn;
  std::vector<std::pair<double, double>> pixels;
  for (const AccuracyPoint& p : mode.accuracy_over_time) {
    const std::optional<double> at = axis.of_point(p);
    if (!at.has_value()) continue;
    drawn.push_back(&p);
    pixels.emplace_back(x(*at), y(p.test_accuracy));
  }
  if (pixels.size() > 1) {
    svg.Curve(pixels, color, "accuracy " + name,
              absl::StrCat(name, ": test accuracy ", Percent(drawn.back()->test_accuracy), " at ",
                           axis.text(*axis.of_point(*drawn.back()))));
  }
  for (size_t i = 0; i < pixels.size(); ++i) {
    const AccuracyPoint& p = *drawn[i];
    svg.Point(pixels[i].first, pixels[i].second, 2.5, color, "evaluation " + name,
              absl::StrCat(name, ": ", Percent(p.test_accuracy), " test accuracy at ",
                           axis.text(*axis.of_point(p)), " (step ", WithThousands(p.step),
                           ", training loss ", ShortNumber(p.loss), ")"));
  }
  DrawTargetSpread(svg, axis, x, y, mode, run, target, target_accuracy);
  if (const std::optional<double> reached = axis.to_target(mode)) {
    const double at = x(*reached);
    svg.Line(at, y(0), at, y(1), color, /*dashed=*/true);
    svg.Text(at + 3, y(1) + 12 + 14 * static_cast<double>(run),
             absl::StrCat(name, " ", target, " at ", axis.text(*reached)), "start", 10);
  }
}

// The largest x of any point of any run (every repeat's: the spread at the target must fit too).
double LargestX(const Axis& axis, const std::vector<const ModeReport*>& runs) {
  double largest = 0;
  for (const ModeReport* run : runs) {
    for (const ModeReport* r : RunsOf(*run)) {
      for (const AccuracyPoint& p : r->accuracy_over_time) {
        largest = std::max(largest, axis.of_point(p).value_or(0));
      }
    }
  }
  return largest;
}

// The grid, the axes and the target line of a chart whose x runs to `x`'s domain.
void DrawFrame(SvgCanvas& svg, const Axis& axis, const Scale& x, const Scale& y,
               const std::vector<double>& x_ticks, const JobConfig& config) {
  const double right = kWidth - kRight, bottom = kHeight - kBottom;
  for (int i = 0; i <= 5; ++i) {
    const double share = i / 5.0;
    svg.Line(kLeft, y(share), right, y(share), kGridColor);
    svg.Text(kLeft - 6, y(share) + 4, absl::StrCat(i * 20, "%"), "end", 11);
  }
  for (double t : x_ticks) {
    svg.Line(x(t), kTop, x(t), bottom, kGridColor);
    svg.Text(x(t), bottom + 16, axis.tick_text(t), "middle", 11);
  }
  svg.Line(kLeft, kTop, kLeft, bottom, kInkColor);
  svg.Line(kLeft, bottom, right, bottom, kInkColor);
  svg.Text((kLeft + right) / 2, bottom + 34, axis.label, "middle", 12);
  const std::string target = TargetText(config);
  svg.Line(kLeft, y(config.target_accuracy), right, y(config.target_accuracy), kInkColor,
           /*dashed=*/true);
  svg.Text(right - 4, y(config.target_accuracy) - 5, "target " + target, "end", 11);
}

std::string AccuracyChart(const JobComparison& job, const std::string& id, const Axis& axis,
                          const std::string& title) {
  const std::vector<const ModeReport*> runs = JobRuns(job);
  SvgCanvas svg(id, kWidth, kHeight, title);
  svg.Text(8, 18, title, "start", 14, true);
  const double x_max = LargestX(axis, runs);
  if (!(x_max > 0)) {
    svg.Text(
        kWidth / 2, kHeight / 2,
        job.config.has_test_set ? axis.no_data : "no data: this data set has no held-out test set",
        "middle");
    return svg.Finish();
  }
  const std::string target = TargetText(job.config);
  svg.Text(8, 38, absl::StrCat(axis.subtitle, "; target ", target), "start", 11);
  const double right = kWidth - kRight, bottom = kHeight - kBottom;
  const std::vector<double> x_ticks = axis.ticks(x_max, 6);
  const Scale x{0, x_ticks.back(), kLeft, right, false};
  const Scale y{0, 1, bottom, kTop, false};
  DrawFrame(svg, axis, x, y, x_ticks, job.config);
  for (size_t i = 0; i < runs.size(); ++i) {
    DrawRun(svg, axis, x, y, *runs[i], i, target, job.config.target_accuracy);
  }
  // Bottom right, one run a line upwards: where accuracy curves, rising from the bottom left,
  // leave room.
  for (size_t i = 0; i < runs.size(); ++i) {
    const double line = bottom - 22 - 16 * static_cast<double>(runs.size() - 1 - i);
    svg.Swatch(right - 150, line, RunColor(i));
    svg.Text(right - 133, line + 10, RunName(*runs[i]), "start", 11);
  }
  return svg.Finish();
}

bool OnlyTheTwoModes(const JobComparison& job) {
  return job.ps_variants.empty() && job.compression_variants.empty();
}

}  // namespace

std::string AccuracyOverTimeChart(const JobComparison& job, const std::string& id) {
  return AccuracyChart(job, id, kTimeAxis,
                       OnlyTheTwoModes(job) ? "Test accuracy against wall-clock time, both modes"
                                            : "Test accuracy against wall-clock time, every run");
}

std::string AccuracyOverBytesChart(const JobComparison& job, const std::string& id) {
  return AccuracyChart(job, id, kBytesAxis,
                       OnlyTheTwoModes(job) ? "Test accuracy against bytes sent, both modes"
                                            : "Test accuracy against bytes sent, every run");
}

}  // namespace ringside::cli
