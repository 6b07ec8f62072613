#include "tests/cli/html_probe.h"

#include "absl/strings/str_cat.h"

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

int CountOccurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace ringside::cli::testing
