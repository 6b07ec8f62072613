#include "tests/cli/html_probe.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/report/svg_chart.h"

namespace ringside::cli::testing {

std::vector<std::string> ChartIds(int index) {
  const std::string job = absl::StrCat("job", index);
  return {"links-ring-" + job,   "links-ps-" + job,      "phases-" + job,
          "model-worker-" + job, "model-busiest-" + job, "loss-time-" + job};
}

std::string SvgById(const std::string& html, const std::string& id) {
  const size_t id_at = html.find(absl::StrCat("class=\"chart\" id=\"", id, "\""));
  if (id_at == std::string::npos) return "";
  const size_t begin = html.rfind("<svg", id_at);
  const size_t end = html.find("</svg>", id_at);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return html.substr(begin, end + 6 - begin);
}

int CountMarks(const std::string& svg, const std::string& tag, const std::string& classes) {
  const std::string prefix = absl::StrCat("<", tag, " class=\"mark");
  if (!classes.empty()) return CountOccurrences(svg, absl::StrCat(prefix, " ", classes, "\""));
  return CountOccurrences(svg, prefix);
}

namespace {

// The value of attribute `name` in the start tag `tag`; "" when absent.
std::string Attribute(const std::string& tag, const std::string& name) {
  const std::string key = absl::StrCat(" ", name, "=\"");
  const size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return tag.substr(begin, tag.find('"', begin) - begin);
}

std::string Unescape(const std::string& text) {
  return absl::StrReplaceAll(
      text, {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}});
}

}  // namespace

std::vector<SvgText> TextsOfClass(const std::string& svg, const std::string& css_class) {
  std::vector<SvgText> texts;
  const std::string opening = absl::StrCat("<text class=\"", css_class, "\"");
  for (size_t at = svg.find(opening); at != std::string::npos; at = svg.find(opening, at + 1)) {
    const size_t tag_end = svg.find('>', at);
    const size_t close = svg.find("</text>", tag_end);
    if (tag_end == std::string::npos || close == std::string::npos) break;
    const std::string tag = svg.substr(at, tag_end - at);
    SvgText text;
    text.x = std::atof(Attribute(tag, "x").c_str());
    text.y = std::atof(Attribute(tag, "y").c_str());
    text.anchor = Attribute(tag, "text-anchor");
    text.size = std::atoi(Attribute(tag, "font-size").c_str());
    text.bold = Attribute(tag, "font-weight") == "bold";
    text.text = Unescape(svg.substr(tag_end + 1, close - tag_end - 1));
    texts.push_back(text);
  }
  return texts;
}

Box BoxOf(const SvgText& text) {
  const double width = TextWidth(text.text, text.size, text.bold);
  const double left = text.anchor == "middle" ? text.x - width / 2
                      : text.anchor == "end"  ? text.x - width
                                              : text.x;
  return {left, text.y - text.size, left + width, text.y + text.size / 5.0};
}

bool Intersect(const Box& a, const Box& b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

std::vector<std::pair<double, double>> CurvePoints(const std::string& svg,
                                                   const std::string& classes) {
  const size_t at = svg.find(absl::StrCat("<polyline class=\"mark ", classes, "\""));
  if (at == std::string::npos) return {};
  const std::string tag = svg.substr(at, svg.find('>', at) - at);
  std::vector<std::pair<double, double>> points;
  for (absl::string_view pair : absl::StrSplit(Attribute(tag, "points"), ' ', absl::SkipEmpty())) {
    const std::vector<std::string> xy = absl::StrSplit(pair, ',');
    if (xy.size() == 2) points.emplace_back(std::atof(xy[0].c_str()), std::atof(xy[1].c_str()));
  }
  return points;
}

int CountOccurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace ringside::cli::testing
