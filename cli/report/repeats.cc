#include "cli/report/repeats.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ringside::cli {
namespace {

// Every figure that is the median over the runs in a summary, read and written by one accessor.
using Field = double& (*)(ModeReport&);
constexpr Field kMedianFields[] = {
    [](ModeReport& m) -> double& { return m.bytes_per_worker_per_step; },
    [](ModeReport& m) -> double& { return m.busiest_node_bytes_per_step; },
    [](ModeReport& m) -> double& { return m.step_p50; },
    [](ModeReport& m) -> double& { return m.step_p95; },
    [](ModeReport& m) -> double& { return m.sync_p50; },
    [](ModeReport& m) -> double& { return m.sync_min; },
    [](ModeReport& m) -> double& { return m.compute_p50; },
    [](ModeReport& m) -> double& { return m.overlap_share; },
    [](ModeReport& m) -> double& { return m.phases.compute; },
    [](ModeReport& m) -> double& { return m.phases.sync; },
    [](ModeReport& m) -> double& { return m.phases.update; },
    [](ModeReport& m) -> double& { return m.sync_share; },
    [](ModeReport& m) -> double& { return m.samples_per_second; },
    [](ModeReport& m) -> double& { return m.final_loss; },
    [](ModeReport& m) -> double& { return m.accuracy; },
    [](ModeReport& m) -> double& { return m.warmup_seconds; },
    [](ModeReport& m) -> double& { return m.eval_seconds_mean; },
};

// The median of an optional figure where every run has it; unset otherwise.
template <typename T>
std::optional<double> MedianIfAll(std::vector<ModeReport>& runs,
                                  std::optional<T>& (*field)(ModeReport&)) {
  std::vector<double> values;
  for (ModeReport& run : runs) {
    if (!field(run).has_value()) return std::nullopt;
    values.push_back(static_cast<double>(*field(run)));
  }
  return Median(std::move(values));
}

void MedianOfTargets(std::vector<ModeReport>& runs, ModeReport& summary) {
  const auto seconds = [](ModeReport& m) -> std::optional<double>& { return m.seconds_to_target; };
  const auto steps = [](ModeReport& m) -> std::optional<int64_t>& { return m.steps_to_target; };
  const auto bytes = [](ModeReport& m) -> std::optional<int64_t>& { return m.bytes_to_target; };
  const auto accuracy = [](ModeReport& m) -> std::optional<double>& { return m.test_accuracy; };
  const auto recent = [](ModeReport& m) -> std::optional<double>& {
    return m.test_accuracy_recent;
  };
  summary.seconds_to_target = MedianIfAll<double>(runs, seconds);
  const std::optional<double> median_steps = MedianIfAll<int64_t>(runs, steps);
  summary.steps_to_target.reset();
  if (median_steps) summary.steps_to_target = static_cast<int64_t>(*median_steps + 0.5);
  const std::optional<double> median_bytes = MedianIfAll<int64_t>(runs, bytes);
  summary.bytes_to_target.reset();
  if (median_bytes) summary.bytes_to_target = static_cast<int64_t>(*median_bytes + 0.5);
  summary.test_accuracy = MedianIfAll<double>(runs, accuracy);
  summary.test_accuracy_recent = MedianIfAll<double>(runs, recent);
  const auto reached = std::count_if(runs.begin(), runs.end(), [](const ModeReport& m) {
    return m.seconds_to_target.has_value();
  });
  if (reached > 0 && reached < static_cast<long>(runs.size())) {
    summary.events.push_back(absl::StrCat("reached the target in ", reached, " of ", runs.size(),
                                          " repeats: no median time to target"));
  }
}

}  // namespace

std::vector<const ModeReport*> RunsOf(const ModeReport& mode) {
  std::vector<const ModeReport*> runs;
  for (const ModeReport& run : mode.repeats) runs.push_back(&run);
  if (runs.empty()) runs.push_back(&mode);
  return runs;
}

Spread FigureSpread(const ModeReport& mode, double (*figure)(const ModeReport&)) {
  std::vector<double> values;
  for (const ModeReport* run : RunsOf(mode)) {
    if (run->completed) values.push_back(figure(*run));
  }
  return SpreadOf(values);
}

std::string RangeText(const ModeReport& mode, double (*figure)(const ModeReport&),
                      std::string (*text)(double)) {
  const Spread spread = FigureSpread(mode, figure);
  return absl::StrCat("(", text(spread.min), "\u2013", text(spread.max), ")");
}

ModeReport SummariseRepeats(std::vector<ModeReport> runs) {
  if (runs.size() == 1) return std::move(runs.front());
  for (ModeReport& run : runs) run.repeats.clear();
  const auto failed =
      std::find_if(runs.begin(), runs.end(), [](const ModeReport& m) { return !m.completed; });
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&runs](size_t a, size_t b) { return runs[a].step_p50 < runs[b].step_p50; });
  // A failed run is the summary (the mode failed); else the (lower) median run by step time.
  ModeReport summary = failed != runs.end() ? *failed : runs[order[(order.size() - 1) / 2]];
  summary.events.clear();
  summary.process_failures.clear();
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const std::string& event : runs[i].events) {
      summary.events.push_back(absl::StrCat("repeat ", i + 1, ": ", event));
    }
    for (const ProcessFailure& f : runs[i].process_failures) summary.process_failures.push_back(f);
  }
  if (failed == runs.end()) {
    for (Field field : kMedianFields) {
      std::vector<double> values;
      for (ModeReport& run : runs) values.push_back(field(run));
      field(summary) = Median(std::move(values));
    }
    MedianOfTargets(runs, summary);
  }
  summary.repeats = std::move(runs);
  return summary;
}

JobComparison MergeRounds(std::vector<JobComparison> rounds) {
  JobComparison merged = rounds.front();
  merged.config.repeats = static_cast<int>(rounds.size());
  if (rounds.size() == 1) return merged;
  std::vector<ModeReport> ring, ps, colocated;
  std::vector<std::vector<ModeReport>> variants(merged.ps_variants.size());
  std::vector<std::vector<ModeReport>> compressed(merged.compression_variants.size());
  merged.parity_checked = false;
  merged.max_abs_param_diff = merged.max_rel_param_diff = 0;
  for (JobComparison& round : rounds) {
    ring.push_back(std::move(round.ring));
    ps.push_back(std::move(round.ps));
    for (size_t v = 0; v < variants.size() && v < round.ps_variants.size(); ++v) {
      variants[v].push_back(std::move(round.ps_variants[v]));
    }
    for (size_t v = 0; v < compressed.size() && v < round.compression_variants.size(); ++v) {
      compressed[v].push_back(std::move(round.compression_variants[v]));
    }
    if (round.ps_colocated.has_value()) colocated.push_back(std::move(*round.ps_colocated));
    if (round.parity_checked) {
      merged.parity_checked = true;
      merged.max_abs_param_diff = std::max(merged.max_abs_param_diff, round.max_abs_param_diff);
      merged.max_rel_param_diff = std::max(merged.max_rel_param_diff, round.max_rel_param_diff);
    }
  }
  merged.ring = SummariseRepeats(std::move(ring));
  merged.ps = SummariseRepeats(std::move(ps));
  for (size_t v = 0; v < variants.size(); ++v) {
    merged.ps_variants[v] = SummariseRepeats(std::move(variants[v]));
  }
  if (!merged.ps_variants.empty()) merged.ps = merged.ps_variants.front();
  for (size_t v = 0; v < compressed.size(); ++v) {
    merged.compression_variants[v] = SummariseRepeats(std::move(compressed[v]));
  }
  if (!colocated.empty()) merged.ps_colocated = SummariseRepeats(std::move(colocated));
  return merged;
}

}  // namespace ringside::cli
