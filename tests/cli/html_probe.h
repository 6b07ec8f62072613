// Test support: finding the report's charts in HTML text, as written by RenderHtmlReport or as
// serialised back by a browser (`chromium --dump-dom`). String scanning, not a parser: the
// report writes one <svg> per chart, never nested, with its class and id attributes first.
#ifndef RINGSIDE_TESTS_CLI_HTML_PROBE_H_
#define RINGSIDE_TESTS_CLI_HTML_PROBE_H_

#include <string>
#include <utility>
#include <vector>

namespace ringside::cli::testing {

// The chart ids RenderHtmlReport gives job `index`.
std::vector<std::string> ChartIds(int index);

// The text of the <svg> element with id `id`, from "<svg" to its "</svg>"; "" when absent.
std::string SvgById(const std::string& html, const std::string& id);

// Elements `<tag class="mark ...">` in `svg`; with `classes` ("measured ring") only those whose
// class is exactly "mark " + classes.
int CountMarks(const std::string& svg, const std::string& tag, const std::string& classes = "");

// A <text> element of a chart as RenderHtmlReport writes it: where it is anchored, how, its
// size and weight, and its (unescaped) content.
struct SvgText {
  double x = 0, y = 0;
  std::string anchor;  // "start", "middle" or "end"
  int size = 0;
  bool bold = false;
  std::string text;
};
// Every <text class="`css_class`"> of `svg`, in document order.
std::vector<SvgText> TextsOfClass(const std::string& svg, const std::string& css_class);
// The box `text` takes: left, top, right, bottom in pixels (its width from TextWidth, its
// height the font size, above the baseline and a fifth below).
struct Box {
  double left, top, right, bottom;
};
Box BoxOf(const SvgText& text);
bool Intersect(const Box& a, const Box& b);

// The points of the first <polyline class="mark `classes`"> of `svg`; empty when none.
std::vector<std::pair<double, double>> CurvePoints(const std::string& svg,
                                                   const std::string& classes);

// Every occurrence of `needle` in `text`.
int CountOccurrences(const std::string& text, const std::string& needle);

}  // namespace ringside::cli::testing

#endif  // RINGSIDE_TESTS_CLI_HTML_PROBE_H_
