// PrintComparisonTable: the rows of comparison_summary.h in a UTF-8 box, then the verdict, the
// model's explanation and the events as word-wrapped text.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/report/compare_report.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/explanations.h"
#include "cli/report/variant_summary.h"
#include "cli/report/verdict.h"

namespace ringside::cli {
namespace {

constexpr size_t kTextWidth = 100;  // wrap prose at the project's column limit

// Columns a string takes on a terminal: one per code point (the table uses no wide glyphs),
// so UTF-8 continuation bytes do not count.
size_t DisplayWidth(const std::string& text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

std::string Padded(const std::string& text, size_t width) {
  return text + std::string(width - std::min(width, DisplayWidth(text)), ' ');
}

std::string Rule(const char* left, const char* middle, const char* right,
                 const std::vector<size_t>& widths) {
  std::string line = left;
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) line += middle;
    for (size_t j = 0; j < widths[i] + 2; ++j) line += "\u2500";
  }
  return line + right + "\n";
}

std::string BoxTable(const std::vector<TableRow>& rows) {
  std::vector<size_t> widths = {0, DisplayWidth("ring"), DisplayWidth("ps")};
  for (const TableRow& row : rows) {
    widths[0] = std::max(widths[0], DisplayWidth(row.label));
    if (row.spans) continue;
    widths[1] = std::max(widths[1], DisplayWidth(row.ring));
    widths[2] = std::max(widths[2], DisplayWidth(row.ps));
  }
  // A spanning value takes both value columns and the border between them.
  for (const TableRow& row : rows) {
    const size_t both = widths[1] + 3 + widths[2];
    if (row.spans && DisplayWidth(row.ring) > both) widths[2] += DisplayWidth(row.ring) - both;
  }
  std::string out = Rule("\u250c", "\u252c", "\u2510", widths);
  out += absl::StrCat("\u2502 ", Padded("", widths[0]), " \u2502 ", Padded("ring", widths[1]),
                      " \u2502 ", Padded("ps", widths[2]), " \u2502\n");
  out += Rule("\u251c", "\u253c", "\u2524", widths);
  for (const TableRow& row : rows) {
    out += absl::StrCat("\u2502 ", Padded(row.label, widths[0]), " \u2502 ");
    if (row.spans) {
      out += Padded(row.ring, widths[1] + 3 + widths[2]);
    } else {
      absl::StrAppend(&out, Padded(row.ring, widths[1]), " \u2502 ", Padded(row.ps, widths[2]));
    }
    out += " \u2502\n";
  }
  return out + Rule("\u2514", "\u2534", "\u2518", widths);
}

// A header row and its rows, every cell in its own column.
std::string BoxGrid(const std::vector<std::vector<std::string>>& table) {
  std::vector<size_t> widths(table.front().size(), 0);
  for (const std::vector<std::string>& row : table) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  const auto line = [&widths](const std::vector<std::string>& row) {
    std::string out = "\u2502";
    for (size_t i = 0; i < row.size(); ++i)
      absl::StrAppend(&out, " ", Padded(row[i], widths[i]), " \u2502");
    return out + "\n";
  };
  std::string out = Rule("\u250c", "\u252c", "\u2510", widths) + line(table.front());
  out += Rule("\u251c", "\u253c", "\u2524", widths);
  for (size_t r = 1; r < table.size(); ++r) out += line(table[r]);
  return out + Rule("\u2514", "\u2534", "\u2518", widths);
}

// Whether `word` is a unit that must stay on the line of the number before it ("7.11 MiB,").
bool IsUnit(absl::string_view word) {
  word = absl::StripSuffix(absl::StripSuffix(absl::StripSuffix(word, "."), ")"), ",");
  word = absl::StripSuffix(word, ";");
  for (absl::string_view unit : {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "s", "ms", "\u00b5s"}) {
    if (word == unit) return true;
  }
  return false;
}

// Greedy word wrap at kTextWidth; continuation lines start with `indent`.
std::string Wrapped(const std::string& text, const std::string& first_indent,
                    const std::string& indent) {
  std::vector<std::string> words;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!words.empty() && IsUnit(word)) {
      absl::StrAppend(&words.back(), " ", word);
    } else {
      words.emplace_back(word);
    }
  }
  std::string out, line = first_indent;
  bool line_has_word = false;
  for (const std::string& word : words) {
    if (line_has_word && DisplayWidth(line) + 1 + DisplayWidth(word) > kTextWidth) {
      out += line + "\n";
      line = indent;
      line_has_word = false;
    }
    if (line_has_word) line += ' ';
    line += word;
    line_has_word = true;
  }
  return out + line + "\n";
}

}  // namespace

void PrintComparisonTable(const JobComparison& job, std::ostream& out) {
  out << Wrapped(JobTitle(job.config), "== ", "   ");
  out << BoxTable(ComparisonRows(job));
  out << Wrapped(DecideWinner(job).line, "", "  ");
  const std::vector<std::string> model = ModelExplanation(job);
  for (size_t i = 0; i < model.size(); ++i) {
    out << Wrapped(model[i], i == 0 ? "" : "  ", i == 0 ? "  " : "    ");
  }
  for (const std::string& line : AccuracyExplanation(job)) out << Wrapped(line, "", "  ");
  if (!job.ps_variants.empty() || !job.compression_variants.empty()) {
    out << VariantTableTitle(job) << ":\n" << BoxGrid(VariantTable(job));
  }
  if (!job.ps_variants.empty()) out << Wrapped(DecideBestVariant(job).line, "", "  ");
  const std::vector<std::string> events = EventLines(job);
  if (!events.empty()) {
    out << "Events:\n";
    for (const std::string& event : events) out << Wrapped(event, "  ! ", "    ");
  }
}

}  // namespace ringside::cli
