#include "cli/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/format_units.h"

namespace ringside::cli {
namespace {

// Coordinates to a tenth of a pixel: exact enough, and the page stays small.
std::string Px(double value) { return absl::StrFormat("%.1f", value); }

std::string TitleChild(const std::string& tooltip) {
  return tooltip.empty() ? "" : absl::StrCat("<title>", HtmlEscape(tooltip), "</title>");
}

std::string MarkClass(const std::string& css_class) {
  return HtmlEscape(css_class.empty() ? "mark" : absl::StrCat("mark ", css_class));
}

}  // namespace

double Scale::operator()(double value) const {
  double t;
  if (log) {
    t = (std::log(value) - std::log(domain_min)) / (std::log(domain_max) - std::log(domain_min));
  } else {
    t = (value - domain_min) / (domain_max - domain_min);
  }
  if (!std::isfinite(t)) t = 0;
  return range_min + t * (range_max - range_min);
}

std::vector<double> LinearTicks(double max, int target) {
  if (!(max > 0) || target < 1) return {0, 1};
  const double raw = max / target;
  const double decade = std::pow(10, std::floor(std::log10(raw)));
  double step = decade * 10;
  for (double m : {1.0, 2.0, 5.0}) {
    if (decade * m >= raw) {
      step = decade * m;
      break;
    }
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    ticks.push_back(i * step);
    if (i * step >= max) break;
  }
  return ticks;
}

std::vector<double> ByteTicks(double max, int target) {
  if (!(max > 0)) return {0, 1};
  // Round numbers of the unit HumanBytes will print the labels in (KiB, MiB, ...).
  double unit = 1;
  while (max / unit >= 1024) unit *= 1024;
  std::vector<double> ticks = LinearTicks(max / unit, target);
  for (double& tick : ticks) tick *= unit;
  return ticks;
}

std::vector<double> PowerOfTwoTicks(double min, double max, int max_ticks) {
  if (!(min > 0) || !(max >= min)) return {};
  const int first = static_cast<int>(std::ceil(std::log2(min) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log2(max) + 1e-9));
  const int count = last - first + 1;
  const int stride = std::max(1, (count + max_ticks - 1) / std::max(max_ticks, 1));
  std::vector<double> ticks;
  for (int e = first; e <= last; e += stride) ticks.push_back(std::ldexp(1.0, e));
  return ticks;
}

double TextWidth(const std::string& text, int size, bool bold) {
  double ems = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte
    const bool wide = std::string_view("mwMW=%@&").find(c) != std::string_view::npos;
    ems += wide ? 1.0 : (bold ? 0.70 : 0.62);
  }
  return ems * size;
}

std::vector<std::string> WrapText(const std::string& text, size_t max_chars) {
  // Words: split at spaces (dropped) and before '/' (kept with the word it starts).
  std::vector<std::pair<std::string, bool>> words;  // a word, and whether a space preceded it
  bool spaced = false;
  for (char c : text) {
    if (c == ' ') {
      spaced = true;
    } else if (c == '/' || words.empty() || spaced) {
      words.push_back({std::string(1, c), spaced && !words.empty()});
      spaced = false;
    } else {
      words.back().first += c;
    }
  }
  std::vector<std::string> lines;
  for (const auto& [word, after_space] : words) {
    const std::string joined =
        lines.empty() ? word : lines.back() + (after_space ? " " : "") + word;
    if (!lines.empty() && joined.size() <= max_chars) {
      lines.back() = joined;
    } else {
      lines.push_back(word);
    }
  }
  return lines;
}

SvgCanvas::SvgCanvas(const std::string& id, double width, double height, const std::string& label)
    : id_(HtmlEscape(id)), label_(HtmlEscape(label)), width_(width), height_(height) {}

void SvgCanvas::Bar(double x, double y, double width, double height, const char* fill,
                    const std::string& css_class, const std::string& tooltip) {
  absl::StrAppend(&body_, "<rect class=\"", MarkClass(css_class), "\" x=\"", Px(x), "\" y=\"",
                  Px(y), "\" width=\"", Px(std::max(width, 0.0)), "\" height=\"",
                  Px(std::max(height, 0.0)), "\" fill=\"", fill, "\">", TitleChild(tooltip),
                  "</rect>\n");
}

void SvgCanvas::Point(double cx, double cy, double radius, const char* fill,
                      const std::string& css_class, const std::string& tooltip) {
  absl::StrAppend(&body_, "<circle class=\"", MarkClass(css_class), "\" cx=\"", Px(cx), "\" cy=\"",
                  Px(cy), "\" r=\"", Px(radius), "\" fill=\"", fill, "\" stroke=\"", kInkColor,
                  "\" stroke-width=\"1.5\">", TitleChild(tooltip), "</circle>\n");
}

void SvgCanvas::Curve(const std::vector<std::pair<double, double>>& points, const char* stroke,
                      const std::string& css_class, const std::string& tooltip) {
  std::string coordinates;
  for (const auto& [x, y] : points) absl::StrAppend(&coordinates, Px(x), ",", Px(y), " ");
  absl::StrAppend(&body_, "<polyline class=\"", MarkClass(css_class), "\" points=\"", coordinates,
                  "\" fill=\"none\" stroke=\"", stroke,
                  "\" stroke-width=\"2.5\" stroke-linejoin=\"round\">", TitleChild(tooltip),
                  "</polyline>\n");
}

void SvgCanvas::Line(double x1, double y1, double x2, double y2, const char* stroke, bool dashed) {
  absl::StrAppend(&body_, "<line x1=\"", Px(x1), "\" y1=\"", Px(y1), "\" x2=\"", Px(x2), "\" y2=\"",
                  Px(y2), "\" stroke=\"", stroke, "\" stroke-width=\"1\"",
                  dashed ? " stroke-dasharray=\"4 3\"" : "", "/>\n");
}

void SvgCanvas::Swatch(double x, double y, const char* fill) {
  absl::StrAppend(&body_, "<rect class=\"swatch\" x=\"", Px(x), "\" y=\"", Px(y),
                  "\" width=\"12\" height=\"12\" fill=\"", fill, "\"/>\n");
}

void SvgCanvas::Text(double x, double y, const std::string& text, const char* anchor, int size,
                     bool bold, const char* css_class) {
  absl::StrAppend(
      &body_, "<text",
      css_class != nullptr ? absl::StrCat(" class=\"", HtmlEscape(css_class), "\"") : "", " x=\"",
      Px(x), "\" y=\"", Px(y), "\" text-anchor=\"", anchor, "\" font-size=\"", size, "\"",
      bold ? " font-weight=\"bold\"" : "", " fill=\"", kInkColor, "\">", HtmlEscape(text),
      "</text>\n");
}

std::string SvgCanvas::Finish() const {
  // The xmlns makes the element valid on its own too (saved from the page as an .svg file).
  return absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"", id_,
                      "\" width=\"", Px(width_), "\" height=\"", Px(height_), "\" viewBox=\"0 0 ",
                      Px(width_), " ", Px(height_), "\" role=\"img\" aria-label=\"", label_,
                      "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<title>",
                      label_, "</title>\n", body_, "</svg>\n");
}

void DrawWorkersAxes(SvgCanvas& svg, const ChartFrame& f, double min_workers, double max_workers,
                     int x_ticks, const std::function<std::string(double)>& y_label) {
  for (double n : PowerOfTwoTicks(min_workers, max_workers, x_ticks)) {
    svg.Line(f.x(n), f.top, f.x(n), f.bottom, kGridColor);
    svg.Text(f.x(n), f.bottom + 16, absl::StrCat(static_cast<int>(n)), "middle", 11);
  }
  for (double value : PowerOfTwoTicks(f.y.domain_min, f.y.domain_max, 8)) {
    svg.Line(f.left, f.y(value), f.right, f.y(value), kGridColor);
    svg.Text(f.left - 6, f.y(value) + 4, y_label(value), "end", 11);
  }
  svg.Line(f.left, f.top, f.left, f.bottom, kInkColor);
  svg.Line(f.left, f.bottom, f.right, f.bottom, kInkColor);
  svg.Text((f.left + f.right) / 2, f.bottom + 34, "workers N", "middle", 12);
}

}  // namespace ringside::cli
