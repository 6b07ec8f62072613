#include "cli/report/report_charts.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "cli/report/model_prediction.h"
#include "cli/report/repeats.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli {
namespace {

const char* ModeColor(SyncMode mode) { return mode == SyncMode::kRing ? kRingColor : kPsColor; }

std::string ModeName(SyncMode mode) { return std::string(SyncModeName(mode)); }

// A figure as a bar length: NaN or negative (never a real byte count or time) draws nothing.
double Drawable(double value) { return value > 0 && std::isfinite(value) ? value : 0; }

void Legend(SvgCanvas& svg, double x, double y,
            const std::vector<std::pair<const char*, std::string>>& entries) {
  for (const auto& [color, text] : entries) {
    svg.Swatch(x, y - 10, color);
    svg.Text(x + 17, y, text, "start", 12);
    x += 30 + 7.2 * text.size();  // about DejaVu Sans's advance at 12 px
  }
}

}  // namespace

std::string LinkBytesChart(const ModeReport& mode, const std::string& id) {
  constexpr double kWidth = 580, kLeft = 160, kRight = 72, kTop = 50, kRow = 26, kBottom = 40;
  const std::string name = ModeName(mode.mode);
  const std::string title = absl::StrCat(name, ": payload bytes per step on each link");
  const double rows = std::max<double>(1, mode.links.size());
  const double height = kTop + rows * kRow + kBottom;
  SvgCanvas svg(id, kWidth, height, title);
  svg.Text(8, 18, title, "start", 14, true);
  Legend(svg, 8, 38, {{ModeColor(mode.mode), "measured"}, {kExpectedColor, "expected (model)"}});

  double max = 0;
  for (const LinkTraffic& link : mode.links) {
    max = std::max({max, Drawable(link.bytes_per_step), Drawable(link.expected_bytes_per_step)});
  }
  if (mode.links.empty() || !(max > 0)) {
    svg.Text(kWidth / 2, kTop + kRow / 2 + 4,
             mode.completed ? "no link traffic recorded" : "no data: the run failed", "middle");
    return svg.Finish();
  }
  const std::vector<double> ticks = ByteTicks(max, 4);
  const Scale x{0, ticks.back(), kLeft, kWidth - kRight};
  const double plot_bottom = kTop + rows * kRow;
  for (double tick : ticks) {
    svg.Line(x(tick), kTop, x(tick), plot_bottom, kGridColor);
    svg.Text(x(tick), plot_bottom + 16, HumanBytes(tick), "middle", 11);
  }
  for (size_t i = 0; i < mode.links.size(); ++i) {
    const LinkTraffic& link = mode.links[i];
    const double y = kTop + i * kRow;
    const std::string label = absl::StrCat(link.src, " \u2192 ", link.dst);
    svg.Text(kLeft - 8, y + kRow / 2 + 4, label, "end", 12);
    svg.Bar(kLeft, y + 3, x(Drawable(link.bytes_per_step)) - kLeft, 11, ModeColor(mode.mode),
            absl::StrCat("measured ", name),
            absl::StrCat(label, ": measured ", HumanBytes(link.bytes_per_step), " (",
                         ShortNumber(link.bytes_per_step), " B) per step"));
    svg.Bar(kLeft, y + 15, x(Drawable(link.expected_bytes_per_step)) - kLeft, 7, kExpectedColor,
            absl::StrCat("expected ", name),
            absl::StrCat(label, ": model ", HumanBytes(link.expected_bytes_per_step), " (",
                         ShortNumber(link.expected_bytes_per_step), " B) per step"));
    svg.Text(x(std::max(Drawable(link.bytes_per_step), Drawable(link.expected_bytes_per_step))) + 5,
             y + 14, HumanBytes(link.bytes_per_step), "start", 11);
  }
  svg.Line(kLeft, kTop, kLeft, plot_bottom, kInkColor);
  svg.Line(kLeft, plot_bottom, kWidth - kRight, plot_bottom, kInkColor);
  svg.Text((kLeft + kWidth - kRight) / 2, plot_bottom + 32, "bytes per step", "middle", 11);
  return svg.Finish();
}

namespace {

constexpr int kRunLabelSize = 13, kValueLabelSize = 11;
constexpr size_t kRunLabelChars = 14;  // a run's name wraps at this many characters a line

// One bar of the phase chart: its run, the name's lines under it, the total above it, and the
// width its slot reserves so that no two slots' labels can meet.
struct PhaseSlot {
  const ModeReport* run;
  std::vector<std::string> name_lines;
  std::string value;  // "210 ms, sync 57.1%", or "failed"
  double width;
};

std::vector<PhaseSlot> PhaseSlots(const JobComparison& job) {
  constexpr double kMinSlot = 121, kGap = 12;  // two runs fill the chart's 242 px as always
  std::vector<PhaseSlot> slots;
  for (const ModeReport* run : JobRuns(job)) {
    PhaseSlot slot{run, WrapText(RunName(*run), kRunLabelChars), "failed", kMinSlot};
    if (run->completed) {
      const double total =
          Drawable(run->phases.compute) + Drawable(run->phases.sync) + Drawable(run->phases.update);
      slot.value = absl::StrCat(HumanSeconds(total), ", sync ", Percent(run->sync_share));
    }
    double widest = TextWidth(slot.value, kValueLabelSize);
    for (const std::string& line : slot.name_lines) {
      widest = std::max(widest, TextWidth(line, kRunLabelSize, /*bold=*/true));
    }
    slot.width = std::max(kMinSlot, widest + kGap);
    slots.push_back(std::move(slot));
  }
  return slots;
}

// One run's bar, compute at the bottom, and its total above.
void PhaseBar(SvgCanvas& svg, const Scale& y, const PhaseSlot& slot, double center, double bar) {
  const ModeReport& m = *slot.run;
  const std::string name = RunName(m);
  double base = 0;
  const std::pair<const char*, double> parts[] = {{"compute", Drawable(m.phases.compute)},
                                                  {"sync", Drawable(m.phases.sync)},
                                                  {"update", Drawable(m.phases.update)}};
  const char* colors[] = {kComputeColor, kSyncColor, kUpdateColor};
  for (int p = 0; p < 3; ++p) {
    const auto& [phase, seconds] = parts[p];
    svg.Bar(center - bar / 2, y(base + seconds), bar, y(base) - y(base + seconds), colors[p],
            absl::StrCat("phase ", phase, " ", name),
            absl::StrCat(name, " ", phase, ": ", HumanSeconds(seconds), " per step"));
    base += seconds;
  }
  double top = base;
  if (m.repeats.size() >= 2) {  // --repeats: the whole step's range over the runs
    const Spread spread = FigureSpread(m, [](const ModeReport& r) {
      return Drawable(r.phases.compute) + Drawable(r.phases.sync) + Drawable(r.phases.update);
    });
    svg.Curve({{center, y(spread.min)}, {center, y(spread.max)}}, kInkColor, "spread " + name,
              absl::StrCat(name, ": mean step over ", spread.count, " repeats ",
                           HumanSeconds(spread.min), "\u2013", HumanSeconds(spread.max)));
    svg.Line(center - 7, y(spread.min), center + 7, y(spread.min), kInkColor);
    svg.Line(center - 7, y(spread.max), center + 7, y(spread.max), kInkColor);
    top = std::max(top, spread.max);
  }
  svg.Text(center, y(top) - 6, slot.value, "middle", kValueLabelSize, false, "bar-value");
}

}  // namespace

// Every run (the ring, each PS variant, the colocated PS) gets a slot as wide as its longest
// label, and long names wrap under the bar, so labels cannot overlap however many runs there are.
std::string PhaseChart(const JobComparison& job, const std::string& id) {
  constexpr double kLeft = 78, kRight = 120, kTop = 44, kBottom = 46, kPlotHeight = 250;
  constexpr double kLineHeight = 17;  // 1.3 em: a wrapped name's lines clear each other
  const std::vector<PhaseSlot> slots = PhaseSlots(job);
  double plot_width = 0, max = 0;
  size_t lines = 1;
  for (const PhaseSlot& slot : slots) {
    plot_width += slot.width;
    lines = std::max(lines, slot.name_lines.size());
    if (!slot.run->completed) continue;
    for (const ModeReport* run : RunsOf(*slot.run)) {
      const PhaseSeconds& p = run->phases;
      max = std::max(max, Drawable(p.compute) + Drawable(p.sync) + Drawable(p.update));
    }
  }
  const double width = kLeft + plot_width + kRight;
  const double plot_bottom = kTop + kPlotHeight, plot_right = kLeft + plot_width;
  const double height = plot_bottom + kBottom + kLineHeight * static_cast<double>(lines - 1);
  const std::string title =
      slots.size() > 2 ? "Mean step time by phase, every run" : "Mean step time by phase";
  SvgCanvas svg(id, width, height, title);
  svg.Text(8, 18, title, "start", 14, true);
  if (!(max > 0)) {
    svg.Text(width / 2, height / 2, "no data: no mode completed", "middle");
    return svg.Finish();
  }
  // The same steps as samples/s and step p50 (cli/report/step_figures.h).
  svg.Text(8, 34, "worker-0's steps, as samples/s and p50", "start", 11);
  const std::vector<double> ticks = LinearTicks(max * 1.12, 5);  // headroom for the labels
  const Scale y{0, ticks.back(), plot_bottom, kTop};
  for (double tick : ticks) {
    svg.Line(kLeft, y(tick), plot_right, y(tick), kGridColor);
    svg.Text(kLeft - 6, y(tick) + 4, HumanSeconds(tick), "end", 11);
  }
  double slot_left = kLeft;
  for (const PhaseSlot& slot : slots) {
    const double center = slot_left + slot.width / 2;
    slot_left += slot.width;
    for (size_t i = 0; i < slot.name_lines.size(); ++i) {
      svg.Text(center, plot_bottom + 18 + kLineHeight * static_cast<double>(i), slot.name_lines[i],
               "middle", kRunLabelSize, true, "run-label");
    }
    if (slot.run->completed) {
      PhaseBar(svg, y, slot, center, 60.5);  // the two-run chart's bar, whatever the slot
    } else {
      svg.Text(center, plot_bottom - 10, slot.value, "middle", kValueLabelSize, false, "bar-value");
    }
  }
  svg.Line(kLeft, kTop, kLeft, plot_bottom, kInkColor);
  svg.Line(kLeft, plot_bottom, plot_right, plot_bottom, kInkColor);
  const std::pair<const char*, const char*> legend[] = {
      {kUpdateColor, "update"}, {kSyncColor, "sync"}, {kComputeColor, "compute"}};
  for (int p = 0; p < 3; ++p) {
    svg.Swatch(plot_right + 16, kTop + 8 + 22 * p, legend[p].first);
    svg.Text(plot_right + 33, kTop + 19 + 22 * p, legend[p].second, "start", 12);
  }
  return svg.Finish();
}

}  // namespace ringside::cli
