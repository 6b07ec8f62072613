// A small SVG writer for the report's charts: a canvas that appends escaped elements, scales
// (linear, log) and tick choosers. No JavaScript, no external resources: the page must render
// offline. Every drawn data element carries the class "mark" so tests can count them.
//
// Ownership: SvgCanvas owns its text buffer. Thread-compatible. Cannot fail.
#ifndef RINGSIDE_CLI_REPORT_SVG_CHART_H_
#define RINGSIDE_CLI_REPORT_SVG_CHART_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ringside::cli {

// The report's palette (colour-blind-safe pairs from the Tableau 10 set).
inline constexpr char kRingColor[] = "#1f77b4";
inline constexpr char kPsColor[] = "#ff7f0e";
inline constexpr char kExpectedColor[] = "#b8b8b8";
inline constexpr char kComputeColor[] = "#2ca02c";
inline constexpr char kSyncColor[] = "#d62728";
inline constexpr char kUpdateColor[] = "#9467bd";
inline constexpr char kInkColor[] = "#222222";
inline constexpr char kGridColor[] = "#e4e4e4";

// Maps [domain_min, domain_max] onto [range_min, range_max] pixels, linearly or on a log scale
// (log needs a positive domain). Values outside the domain extrapolate.
struct Scale {
  double domain_min = 0, domain_max = 1, range_min = 0, range_max = 1;
  bool log = false;
  double operator()(double value) const;
};

// About `target` round tick values from 0 to at least `max` (steps of 1, 2 or 5 × 10^k).
std::vector<double> LinearTicks(double max, int target);
// LinearTicks in the IEC unit of `max` (0, 5, 10, 15 MiB rather than 0, 4.77, 9.54 MiB).
std::vector<double> ByteTicks(double max, int target);
// Powers of two covering [min, max] (min > 0), thinned to at most `max_ticks`.
std::vector<double> PowerOfTwoTicks(double min, double max, int max_ticks);

// About how wide `text` renders in DejaVu Sans at `size` px, erring wide: 0.62 em a character
// (0.70 em bold), 1 em for the widest glyphs (m, w, =, %, ...). What a layout reserves so that
// labels cannot run into each other.
double TextWidth(const std::string& text, int size, bool bold = false);
// `text` in lines of at most `max_chars` characters where it can break: at a space (dropped)
// and before a '/' (kept: "backup_workers=1", "/no_straggler"). A longer word stays whole.
std::vector<std::string> WrapText(const std::string& text, size_t max_chars);

class SvgCanvas {
 public:
  // `id` and `label` (the accessible name and hover title) are escaped here.
  SvgCanvas(const std::string& id, double width, double height, const std::string& label);

  // Data marks: `css_class` is appended to "mark"; `tooltip` becomes a <title> child.
  void Bar(double x, double y, double width, double height, const char* fill,
           const std::string& css_class, const std::string& tooltip);
  void Point(double cx, double cy, double radius, const char* fill, const std::string& css_class,
             const std::string& tooltip);
  void Curve(const std::vector<std::pair<double, double>>& points, const char* stroke,
             const std::string& css_class, const std::string& tooltip);

  // Decoration: axes, grid lines, legend swatches, labels.
  void Line(double x1, double y1, double x2, double y2, const char* stroke, bool dashed = false);
  void Swatch(double x, double y, const char* fill);
  // `anchor`: "start", "middle" or "end". `bold` for titles. `css_class`, when given, names
  // the label (tests find laid-out labels by it).
  void Text(double x, double y, const std::string& text, const char* anchor = "start",
            int size = 12, bool bold = false, const char* css_class = nullptr);

  // The whole <svg> element.
  std::string Finish() const;

 private:
  std::string id_, label_;
  double width_, height_;
  std::string body_;
};

// A chart's plot area in pixels and its two scales.
struct ChartFrame {
  double left, top, right, bottom;
  Scale x, y;
};

// The axes of a chart against the number of workers N on a log-2 x axis: a grid line and label
// at each power of two in [min_workers, max_workers] (at most `x_ticks`), at each power of two
// of the y domain (at most 8) labelled by `y_label`, the two axis lines and the x axis's title.
void DrawWorkersAxes(SvgCanvas& svg, const ChartFrame& f, double min_workers, double max_workers,
                     int x_ticks, const std::function<std::string(double)>& y_label);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_SVG_CHART_H_
