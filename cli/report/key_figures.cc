#include "cli/report/key_figures.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/format_units.h"
#include "cli/report/repeats.h"

namespace ringside::cli {
namespace {

constexpr char kMissing[] = "\u2014";  // an em dash, as the table's

// What a kind measures of a run, the cost model's figure for it (0: none) and how it is written.
struct Quantity {
  const char* label;
  double (*measured)(const ModeReport&);
  double (*model)(const ModeReport&);
  std::string (*text)(double);
};

Quantity QuantityOf(KeyFigureKind kind) {
  switch (kind) {
    case KeyFigureKind::kBytesPerWorker:
      return {"bytes/worker/step", [](const ModeReport& m) { return m.bytes_per_worker_per_step; },
              [](const ModeReport& m) { return m.expected_bytes_per_worker_per_step; }, HumanBytes};
    case KeyFigureKind::kBusiestNodeBytes:
      return {"busiest node's bytes/step",
              [](const ModeReport& m) { return m.busiest_node_bytes_per_step; },
              [](const ModeReport& m) { return m.busiest_node_expected_bytes_per_step; },
              HumanBytes};
    case KeyFigureKind::kStepTimeP50:
      break;
  }
  return {"step time p50", [](const ModeReport& m) { return m.step_p50; },
          [](const ModeReport&) { return 0.0; }, HumanSeconds};
}

std::string RatioText(const Quantity& q, const ModeReport& ring, const ModeReport& ps) {
  const double r = q.measured(ring), p = q.measured(ps);
  if (!ring.completed || !ps.completed || !(r > 0) || !(p > 0)) return kMissing;
  const bool ring_larger = r >= p;
  std::string text = absl::StrFormat("%s %.2f\u00d7 %s", ring_larger ? "ring" : "ps",
                                     ring_larger ? r / p : p / r, ring_larger ? "ps" : "ring");
  const double rm = q.model(ring), pm = q.model(ps);
  if (rm > 0 && pm > 0) {
    absl::StrAppend(&text, absl::StrFormat(" (model %.2f\u00d7)", ring_larger ? rm / pm : pm / rm));
  }
  return text;
}

}  // namespace

KeyFigure MakeKeyFigure(const JobComparison& job, KeyFigureKind kind) {
  const Quantity q = QuantityOf(kind);
  // With --repeats, the step time's range over the runs beside its median.
  const bool spread = kind == KeyFigureKind::kStepTimeP50;
  const auto cell = [&q, spread](const ModeReport& m) {
    if (!m.completed) return std::string(kMissing);
    std::string text = q.text(q.measured(m));
    if (spread && m.repeats.size() >= 2)
      absl::StrAppend(&text, " ", RangeText(m, q.measured, q.text));
    return text;
  };
  return {q.label, cell(job.ring), cell(job.ps), RatioText(q, job.ring, job.ps)};
}

std::vector<KeyFigure> KeyFigures(const JobComparison& job) {
  std::vector<KeyFigure> figures;
  for (KeyFigureKind kind : {KeyFigureKind::kBytesPerWorker, KeyFigureKind::kBusiestNodeBytes,
                             KeyFigureKind::kStepTimeP50}) {
    figures.push_back(MakeKeyFigure(job, kind));
  }
  return figures;
}

}  // namespace ringside::cli
