// Test support: finding the report's charts in HTML text, as written by RenderHtmlReport or as
// serialised back by a browser (`chromium --dump-dom`). String scanning, not a parser: the
// report writes one <svg> per chart, never nested, with its class and id attributes first.
#ifndef RINGSIDE_TESTS_CLI_HTML_PROBE_H_
#define RINGSIDE_TESTS_CLI_HTML_PROBE_H_

#include <string>
#include <vector>

namespace ringside::cli::testing {

// The chart ids RenderHtmlReport gives job `index`.
std::vector<std::string> ChartIds(int index);

// The text of the <svg> element with id `id`, from "<svg" to its "</svg>"; "" when absent.
std::string SvgById(const std::string& html, const std::string& id);

// Elements `<tag class="mark ...">` in `svg`; with `classes` ("measured ring") only those whose
// class is exactly "mark " + classes.
int CountMarks(const std::string& svg, const std::string& tag, const std::string& classes = "");

// Every occurrence of `needle` in `text`.
int CountOccurrences(const std::string& text, const std::string& needle);

}  // namespace ringside::cli::testing

#endif  // RINGSIDE_TESTS_CLI_HTML_PROBE_H_
