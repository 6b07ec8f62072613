// The verdict in numbers: the figures a comparison of the modes turns on (what one worker sends
// per step, what the busiest node takes per step, the step time), each as the table shows it,
// with how many times one mode's is the other's, measured and in the cost model. The HTML report
// puts them on its first screen; the side-by-side table (comparison_summary.h) takes the same
// rows' cells from here and marks them (TableRow::key), so the two cannot disagree.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_KEY_FIGURES_H_
#define RINGSIDE_CLI_REPORT_KEY_FIGURES_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli {

enum class KeyFigureKind { kBytesPerWorker, kBusiestNodeBytes, kStepTimeP50 };

struct KeyFigure {
  std::string label;     // "bytes/worker/step"
  std::string ring, ps;  // as the table shows them; an em dash where the mode failed
  // "ring 1.50× ps (model 1.50×)": the larger over the smaller, and the cost model's ratio the
  // same way round where it has one; an em dash unless both modes measured the figure.
  std::string ratio;
};

KeyFigure MakeKeyFigure(const JobComparison& job, KeyFigureKind kind);
// Every kind, in the order above.
std::vector<KeyFigure> KeyFigures(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_KEY_FIGURES_H_
