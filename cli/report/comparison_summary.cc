#include "cli/report/comparison_summary.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/report/format_units.h"
#include "cli/report/key_figures.h"
#include "cli/report/repeats.h"

namespace ringside::cli {
namespace {

constexpr char kMissing[] = "\u2014";  // an em dash: no value (the mode failed)

std::string Ratio(double measured, double expected) {
  if (expected <= 0) return kMissing;
  return absl::StrFormat("%.3f", measured / expected);
}

std::string WorkersAtEnd(const JobConfig& config, const ModeReport& mode) {
  if (mode.final_world <= 0) return kMissing;  // not reported
  std::string text = absl::StrCat(mode.final_world, " of ", config.workers);
  if (mode.final_world < config.workers) {
    absl::StrAppend(&text, " (", config.workers - mode.final_world, " lost)");
  }
  return text;
}

std::string BusiestNode(const ModeReport& mode) {
  if (mode.busiest_node.empty()) return kMissing;
  const char* what = mode.busiest_node.rfind("ps-", 0) == 0 ? " (shard ingress)"
                     : mode.mode == SyncMode::kRing         ? " (ring link)"
                                                            : " (worker ingress)";
  return absl::StrCat(mode.busiest_node, what);
}

std::string PhaseBreakdown(const PhaseSeconds& p) {
  return absl::StrCat(HumanSeconds(p.compute), " / ", HumanSeconds(p.sync), " / ",
                      HumanSeconds(p.update));
}

std::string Status(const ModeReport& mode) {
  if (!mode.completed) {
    return mode.steps > 0 ? absl::StrCat("FAILED after ", WithThousands(mode.steps), " steps")
                          : "FAILED";
  }
  return absl::StrCat("completed, ", WithThousands(mode.steps), " steps");
}

// One value per mode from `value`, or a dash where the mode failed.
template <typename F>
TableRow Row(const JobComparison& job, std::string label, F value) {
  TableRow row;
  row.label = std::move(label);
  row.ring = job.ring.completed ? value(job.ring) : kMissing;
  row.ps = job.ps.completed ? value(job.ps) : kMissing;
  return row;
}

// A key figure's row, its cells as the verdict in numbers shows them.
TableRow KeyRow(const JobComparison& job, std::string label, KeyFigureKind kind) {
  const KeyFigure figure = MakeKeyFigure(job, kind);
  return {std::move(label), figure.ring, figure.ps, false, true};
}

// The sampled relative error of the synchronised gradient against the exact float32 sum.
std::string WireErrorText(const JobConfig& c, const ModeReport& m) {
  if (c.wire_dtype == "fp32") return "exact (fp32)";
  if (!m.wire_relative_error.has_value()) return "not measured";
  return absl::StrCat(absl::StrFormat("%.2e", *m.wire_relative_error), " (max of ",
                      m.wire_error_samples, " steps)");
}

// The largest peak resident memory among the processes whose name starts with `prefix`.
int64_t LargestPeak(const ModeReport& mode, absl::string_view prefix) {
  int64_t largest = 0;
  for (const ProcessMemory& p : mode.processes) {
    if (absl::StartsWith(p.name, prefix)) largest = std::max(largest, p.peak_rss_bytes);
  }
  return largest;
}

std::string LargestPeakRss(const ModeReport& mode, absl::string_view prefix) {
  const int64_t largest = LargestPeak(mode, prefix);
  return largest > 0 ? HumanBytes(static_cast<double>(largest)) : std::string(kMissing);
}

// "92.4 MiB, peak 1.31×": the memory goal and the largest peak against it.
std::string MemoryBoundText(const ModeReport& mode, absl::string_view prefix, int64_t bound) {
  if (bound <= 0) return kMissing;
  const int64_t peak = LargestPeak(mode, prefix);
  std::string text = HumanBytes(static_cast<double>(bound));
  if (peak > 0) absl::StrAppend(&text, ", peak ", Ratio(peak, bound), "\u00d7");
  return text;
}

std::string ParityText(const JobComparison& job) {
  if (!job.parity_checked) return "not checked";
  return absl::StrCat("max |\u0394| ", ShortNumber(job.max_abs_param_diff), ", relative ",
                      ShortNumber(job.max_rel_param_diff));
}

std::string TestAccuracyText(const ModeReport& m) {
  return Percent(m.test_accuracy.value_or(m.accuracy));
}

std::string RecentAccuracyText(const ModeReport& m) {
  if (!m.test_accuracy_recent.has_value()) return "not measured";
  return absl::StrCat(Percent(*m.test_accuracy_recent), " (last ", m.recent_evaluations, ")");
}

std::string TimeToTargetText(const ModeReport& m) {
  if (m.accuracy_over_time.empty()) return "not measured";
  if (!m.seconds_to_target.has_value()) {
    return absl::StrCat("not reached in ", WithThousands(m.steps), " steps");
  }
  std::string text = absl::StrCat(HumanSeconds(*m.seconds_to_target), ", step ",
                                  WithThousands(m.steps_to_target.value_or(0)));
  if (m.repeats.size() >= 2) {
    absl::StrAppend(
        &text, " ",
        RangeText(
            m, [](const ModeReport& r) { return r.seconds_to_target.value_or(0); }, HumanSeconds));
  }
  return text;
}

// What one worker had sent when the target was first reached, with its range over repeats.
std::string BytesToTargetText(const ModeReport& m) {
  if (m.accuracy_over_time.empty()) return "not measured";
  if (!m.seconds_to_target.has_value()) return "not reached";
  if (!m.bytes_to_target.has_value()) return "not recorded";
  std::string text = HumanBytes(static_cast<double>(*m.bytes_to_target));
  if (m.repeats.size() >= 2) {
    absl::StrAppend(
        &text, " ",
        RangeText(
            m,
            [](const ModeReport& r) { return static_cast<double>(r.bytes_to_target.value_or(0)); },
            HumanBytes));
  }
  return text;
}

std::string SamplesPerSecondText(const ModeReport& m) {
  std::string text = ShortNumber(m.samples_per_second);
  if (m.repeats.size() >= 2) {
    absl::StrAppend(&text, " ",
                    RangeText(
                        m, [](const ModeReport& r) { return r.samples_per_second; }, ShortNumber));
  }
  return text;
}

// "5 steps, 1.23 s": the first steps, left out of the per-step figures.
std::string WarmupText(const ModeReport& m) {
  if (m.warmup_steps == 0) return "none left out (a short run)";
  return absl::StrCat(m.warmup_steps, " steps, ", HumanSeconds(m.warmup_seconds));
}

std::string EvaluationText(const ModeReport& m) {
  if (m.accuracy_over_time.empty()) return "none";
  return absl::StrCat(m.accuracy_over_time.size(), " \u00d7 ", HumanSeconds(m.eval_seconds_mean));
}

}  // namespace

std::string JobTitle(const JobConfig& c) {
  return absl::StrCat(c.model, " on ", c.data, ", ", c.optimizer, ", batch ", c.batch_size, ", ",
                      c.steps, " steps, seed ", c.seed, ", ", c.device, "; ", c.workers,
                      " workers, ", c.ps_shards, " PS shards",
                      c.link_rate.empty() ? "" : "; every link shaped to " + LinkRatesText(c));
}

std::vector<TableRow> ComparisonRows(const JobComparison& job) {
  const JobConfig& c = job.config;
  std::vector<TableRow> rows;
  rows.push_back({"status", Status(job.ring), Status(job.ps)});
  if (c.repeats >= 2) {
    rows.push_back({"repeats",
                    absl::StrCat(c.repeats,
                                 " runs per mode, alternated ring, ps, ...; each figure the "
                                 "median, (min\u2013max) over the runs"),
                    "", true});
  }
  rows.push_back({"parameters (K)",
                  absl::StrCat(WithThousands(c.parameters), " \u00d7 ", c.element_bytes, " B = ",
                               HumanBytes(static_cast<double>(c.parameters) * c.element_bytes)),
                  "", true});
  rows.push_back(
      Row(job, "workers at end", [&](const ModeReport& m) { return WorkersAtEnd(c, m); }));
  rows.push_back(KeyRow(job, "bytes/worker/step", KeyFigureKind::kBytesPerWorker));
  rows.push_back(Row(job, "  expected (model)", [](const ModeReport& m) {
    return HumanBytes(m.expected_bytes_per_worker_per_step);
  }));
  rows.push_back(Row(job, "  measured/expected", [](const ModeReport& m) {
    return Ratio(m.bytes_per_worker_per_step, m.expected_bytes_per_worker_per_step);
  }));
  rows.push_back(Row(job, "busiest node", BusiestNode));
  rows.push_back(KeyRow(job, "  bytes/step", KeyFigureKind::kBusiestNodeBytes));
  rows.push_back(Row(job, "  expected (model)", [](const ModeReport& m) {
    return HumanBytes(m.busiest_node_expected_bytes_per_step);
  }));
  rows.push_back(KeyRow(job, "step time p50", KeyFigureKind::kStepTimeP50));
  rows.push_back(
      Row(job, "step time p95", [](const ModeReport& m) { return HumanSeconds(m.step_p95); }));
  rows.push_back(Row(job, "compute/sync/update",
                     [](const ModeReport& m) { return PhaseBreakdown(m.phases); }));
  rows.push_back(Row(job, "sync share", [](const ModeReport& m) { return Percent(m.sync_share); }));
  rows.push_back(Row(job, "overlapped share of step",
                     [](const ModeReport& m) { return Percent(m.overlap_share); }));
  rows.push_back(Row(job, "gradient error (" + c.wire_dtype + " wire)",
                     [&](const ModeReport& m) { return WireErrorText(c, m); }));
  if (!c.link_rate.empty()) {  // ringside lab: the measured sync against the links' bound
    rows.push_back(Row(job, "sync p50 (measured)",
                       [](const ModeReport& m) { return HumanSeconds(m.sync_p50); }));
    rows.push_back(Row(job, "  bound at " + LinkRatesText(c),
                       [](const ModeReport& m) { return HumanSeconds(m.bound_seconds_per_step); }));
    rows.push_back(Row(job, "  waits for", [](const ModeReport& m) { return m.bottleneck_node; }));
    rows.push_back(Row(job, "  measured/bound", [](const ModeReport& m) {
      return Ratio(m.sync_p50, m.bound_seconds_per_step);
    }));
  }
  if (job.ring.predicted_step_seconds > 0 || job.ps.predicted_step_seconds > 0) {  // --probe
    rows.push_back(Row(job, "step p50 predicted", [](const ModeReport& m) {
      return m.predicted_step_seconds > 0 ? HumanSeconds(m.predicted_step_seconds) : kMissing;
    }));
    rows.push_back(Row(job, "  measured/predicted", [](const ModeReport& m) {
      return Ratio(m.step_p50, m.predicted_step_seconds);
    }));
    rows.push_back(Row(job, "sync p50 predicted", [](const ModeReport& m) {
      return m.predicted_sync_seconds > 0 ? HumanSeconds(m.predicted_sync_seconds) : kMissing;
    }));
    rows.push_back(Row(job, "  measured/predicted ", [](const ModeReport& m) {
      return Ratio(m.sync_p50, m.predicted_sync_seconds);
    }));
  }
  rows.push_back(Row(job, "samples/s", SamplesPerSecondText));
  rows.push_back(Row(job, "warm-up (not in step figures)", WarmupText));
  rows.push_back(
      Row(job, "final loss", [](const ModeReport& m) { return ShortNumber(m.final_loss); }));
  if (c.has_test_set) {
    rows.push_back(Row(job, "test accuracy, final", TestAccuracyText));
    rows.push_back(Row(job, "  mean of last evaluations", RecentAccuracyText));
    rows.push_back(
        Row(job, absl::StrCat("time to ", TargetText(c), " test accuracy"), TimeToTargetText));
    rows.push_back(Row(job, "  bytes sent by then (one worker)", BytesToTargetText));
    rows.push_back(Row(job, "evaluations (off the step)", EvaluationText));
  } else {
    rows.push_back(Row(job, "accuracy", [](const ModeReport& m) { return Percent(m.accuracy); }));
  }
  rows.push_back(Row(job, "peak RSS, largest worker",
                     [](const ModeReport& m) { return LargestPeakRss(m, "worker-"); }));
  rows.push_back(Row(job, "  bound: state + 64 MiB", [&](const ModeReport& m) {
    return MemoryBoundText(m, "worker-", c.worker_memory_bound_bytes);
  }));
  rows.push_back(Row(job, "peak RSS, largest shard",
                     [](const ModeReport& m) { return LargestPeakRss(m, "ps-"); }));
  rows.push_back(Row(job, "  bound: range state + 64 MiB", [&](const ModeReport& m) {
    return MemoryBoundText(m, "ps-", c.shard_memory_bound_bytes);
  }));
  rows.push_back(Row(job, "peak RSS, controller",
                     [](const ModeReport& m) { return LargestPeakRss(m, "controller"); }));
  rows.push_back({"final params parity", ParityText(job), "", true});
  return rows;
}

std::string TargetText(const JobConfig& config) {
  return absl::StrFormat("%g%%", config.target_accuracy * 100);
}

std::string LinkRatesText(const JobConfig& c) {
  if (c.slow_links.empty()) return c.link_rate;
  std::vector<std::string> slow;
  for (const auto& [host, rate] : c.slow_links) slow.push_back(absl::StrCat(host, ": ", rate));
  return absl::StrCat(c.link_rate, " (", absl::StrJoin(slow, ", "), ")");
}

}  // namespace ringside::cli
