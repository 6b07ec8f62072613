#include "cli/report/comparison_summary.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/report/accuracy_summary.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "cli/report/key_figures.h"
#include "cli/report/model_prediction.h"
#include "common/cost_model.h"

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
  return absl::StrCat(HumanSeconds(*m.seconds_to_target), ", step ",
                      WithThousands(m.steps_to_target.value_or(0)));
}

std::string EvaluationText(const ModeReport& m) {
  if (m.accuracy_over_time.empty()) return "none";
  return absl::StrCat(m.accuracy_over_time.size(), " \u00d7 ", HumanSeconds(m.eval_seconds_mean));
}

// --colocate: the cost model's colocated traffic and how the run compares with the others.
std::vector<std::string> ColocatedLines(const JobComparison& job) {
  const JobConfig& c = job.config;
  const ModeReport& m = *job.ps_colocated;
  const int n = c.workers;
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat(
      "ps colocated: S = N = %d shards, shard i beside worker i: each host sends worker i's "
      "pushes to the other N\u22121 shards and shard i's replies to the other N\u22121 "
      "workers, 2(N\u22121)K/N \u2248 %s each way, as a ring worker (its own shard's "
      "traffic never leaves the host).",
      n,
      // Host 0 holds the largest range (EvenRanges puts the larger first): the busiest host.
      HumanBytes(static_cast<double>(
          ColocatedPsHostElements(static_cast<uint64_t>(c.parameters), n, 0) * c.element_bytes))));
  if (!m.completed) return lines;
  lines.push_back(absl::StrCat(
      "Measured, ps colocated: samples/s ", ShortNumber(m.samples_per_second), " (ring ",
      ShortNumber(job.ring.samples_per_second), ", ps ", ShortNumber(job.ps.samples_per_second),
      "), step p50 ", HumanSeconds(m.step_p50), ", sync p50 ", HumanSeconds(m.sync_p50),
      m.bound_seconds_per_step > 0
          ? absl::StrCat(" against a bound of ", HumanSeconds(m.bound_seconds_per_step))
          : "",
      ", bytes/worker/step ", HumanBytes(m.bytes_per_worker_per_step), " (model ",
      HumanBytes(m.expected_bytes_per_worker_per_step), ")."));
  return lines;
}

// "20mbit", or with --slow_link "20mbit (worker-3: 5mbit)": the rates the lab's bound is at.
std::string LinkRatesText(const JobConfig& c) {
  if (c.slow_links.empty()) return c.link_rate;
  std::vector<std::string> slow;
  for (const auto& [host, rate] : c.slow_links) slow.push_back(absl::StrCat(host, ": ", rate));
  return absl::StrCat(c.link_rate, " (", absl::StrJoin(slow, ", "), ")");
}

std::string VerdictDetails(const JobComparison& job) {
  return absl::StrCat("samples/s ring ", ShortNumber(job.ring.samples_per_second), " vs ps ",
                      ShortNumber(job.ps.samples_per_second), "; step p50 ring ",
                      HumanSeconds(job.ring.step_p50), " vs ps ", HumanSeconds(job.ps.step_p50));
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
  rows.push_back(
      Row(job, "samples/s", [](const ModeReport& m) { return ShortNumber(m.samples_per_second); }));
  rows.push_back(
      Row(job, "final loss", [](const ModeReport& m) { return ShortNumber(m.final_loss); }));
  if (c.has_test_set) {
    rows.push_back(Row(job, "test accuracy, final", TestAccuracyText));
    rows.push_back(Row(job, "  mean of last evaluations", RecentAccuracyText));
    rows.push_back(
        Row(job, absl::StrCat("time to ", TargetText(c), " test accuracy"), TimeToTargetText));
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

namespace {

// Both reached the target: the sooner wins.
Verdict ByTimeToTarget(const JobComparison& job) {
  Verdict verdict;
  const double ring = *job.ring.seconds_to_target, ps = *job.ps.seconds_to_target;
  verdict.basis = "seconds_to_target";
  verdict.winner = ring <= ps ? SyncMode::kRing : SyncMode::kPs;
  verdict.ratio = std::max(ring, ps) / std::min(ring, ps);
  const std::string target = TargetText(job.config);
  const std::string details =
      absl::StrCat("ring ", HumanSeconds(ring), " at step ",
                   WithThousands(*job.ring.steps_to_target), ", ps ", HumanSeconds(ps), " at step ",
                   WithThousands(*job.ps.steps_to_target), "; ", VerdictDetails(job));
  if (verdict.ratio - 1 <= kTieTolerance) {
    verdict.outcome = Outcome::kTie;
    verdict.line = absl::StrFormat(
        "A tie on this run: ring and ps reached %s test accuracy within %.0f%% of each other's "
        "time (%s).",
        target, kTieTolerance * 100, details);
    return verdict;
  }
  verdict.outcome = Outcome::kWinner;
  const SyncMode loser = verdict.winner == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
  verdict.line = absl::StrFormat(
      "Winner on this run: %s, reaching %s test accuracy %.2f\u00d7 as soon as %s (%s).",
      SyncModeName(verdict.winner), target, verdict.ratio, SyncModeName(loser), details);
  return verdict;
}

// Where the data has a test set but not both modes reached the target: which did.
std::string TargetNote(const JobComparison& job) {
  if (!job.config.has_test_set) return "";
  const std::string target = TargetText(job.config);
  const bool ring = job.ring.seconds_to_target.has_value();
  const bool ps = job.ps.seconds_to_target.has_value();
  if (!ring && !ps) {
    return absl::StrCat(" Neither mode reached ", target, " test accuracy within ",
                        WithThousands(job.config.steps), " steps.");
  }
  const ModeReport& reached = ring ? job.ring : job.ps;
  return absl::StrCat(" Only ", SyncModeName(reached.mode), " reached ", target, " test accuracy (",
                      HumanSeconds(*reached.seconds_to_target), ", step ",
                      WithThousands(reached.steps_to_target.value_or(0)), ").");
}

// By throughput: samples/s, or 1/p50 when a rate is missing.
Verdict ByThroughput(const JobComparison& job) {
  Verdict verdict;
  double ring = job.ring.samples_per_second, ps = job.ps.samples_per_second;
  verdict.basis = "samples_per_second";
  if (ring <= 0 || ps <= 0) {
    if (job.ring.step_p50 <= 0 || job.ps.step_p50 <= 0) {
      verdict.basis.clear();
      verdict.line = "No winner: neither samples/s nor step times were measured for both modes.";
      return verdict;
    }
    ring = 1 / job.ring.step_p50;
    ps = 1 / job.ps.step_p50;
    verdict.basis = "step_p50";
  }
  verdict.winner = ring >= ps ? SyncMode::kRing : SyncMode::kPs;
  verdict.ratio = std::max(ring, ps) / std::min(ring, ps);
  const std::string what = verdict.basis == "samples_per_second" ? "samples/s" : "step rate";
  if (verdict.ratio - 1 <= kTieTolerance) {
    verdict.outcome = Outcome::kTie;
    verdict.line =
        absl::StrFormat("A tie on this run: ring and ps within %.0f%% of each other (%s).",
                        kTieTolerance * 100, VerdictDetails(job));
    return verdict;
  }
  verdict.outcome = Outcome::kWinner;
  const SyncMode loser = verdict.winner == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
  verdict.line = absl::StrFormat("Winner on this run: %s, %.2f\u00d7 the %s of %s (%s).",
                                 SyncModeName(verdict.winner), verdict.ratio, what,
                                 SyncModeName(loser), VerdictDetails(job));
  return verdict;
}

}  // namespace

Verdict DecideWinner(const JobComparison& job) {
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    if (!mode->completed) {
      Verdict verdict;
      verdict.line = absl::StrCat("No winner: the ", SyncModeName(mode->mode), " run failed (",
                                  mode->failure.empty() ? "no reason given" : mode->failure, ").");
      return verdict;
    }
  }
  // Time to target needs both times, and both above zero to make a ratio (a target the initial
  // parameters already meet is no race).
  if (job.ring.seconds_to_target.value_or(0) > 0 && job.ps.seconds_to_target.value_or(0) > 0) {
    return ByTimeToTarget(job);
  }
  Verdict verdict = ByThroughput(job);
  verdict.line += TargetNote(job);
  return verdict;
}

std::vector<std::string> AccuracyExplanation(const JobComparison& job) {
  const JobConfig& c = job.config;
  std::vector<std::string> lines;
  if (!c.has_test_set) return lines;
  lines.push_back(absl::StrCat(
      "Test accuracy: worker-0 evaluates the job's parameters (in ps mode the shards' own copy; "
      "under --staleness or --backup_workers the parameters it pulled for its next step) on "
      "the whole held-out test set every ",
      c.eval_every,
      " steps and after the last, on a thread of its own at low priority: the evaluation's time "
      "is in no step's phases and not in samples/s, though it shares the machine's cores with the "
      "training. It holds no copy of the model: each point's parameters wait in a file beside "
      "its evaluation file and are evaluated from there, a block of weights at a time."));
  lines.push_back(absl::StrCat(
      "Time to ", TargetText(c),
      " is defined on what was measured: the wall-clock time from the cluster's first step to the "
      "end of the step whose parameters were the first evaluated at or above ",
      TargetText(c), ", so it is resolved to ", c.eval_every,
      " steps (more where ps points came late). One evaluation is noisy by a few points at this "
      "batch size: the mean of the last ",
      kRecentEvaluations, " evaluations is the steadier figure of where each mode ended."));
  return lines;
}

std::vector<std::string> ModelExplanation(const JobComparison& job) {
  const JobConfig& c = job.config;
  const int n = c.workers, s = c.ps_shards;
  const ModelBytes ring = PredictBytesPerStep(SyncMode::kRing, c.parameters, n, s, c.element_bytes);
  const ModelBytes ps = PredictBytesPerStep(SyncMode::kPs, c.parameters, n, s, c.element_bytes);
  const std::string k = WithThousands(c.parameters);
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("Cost model with K = ", k, " parameters of ", c.element_bytes,
                               " B, N = ", n, " workers, S = ", s, " shards:"));
  lines.push_back(absl::StrFormat(
      "per worker and step the ring sends 2(N\u22121)K/N = 2\u00b7%d\u00b7%s/%d \u2248 %s, the "
      "PS sends K = %s (the ring sends %.2f\u00d7 as much);",
      n - 1, k, n, HumanBytes(ring.per_worker), HumanBytes(ps.per_worker),
      ring.per_worker / std::max(ps.per_worker, 1.0)));
  lines.push_back(absl::StrFormat(
      "a PS shard takes N\u00b7K/S = %d\u00b7%s/%d \u2248 %s per step while a ring link "
      "carries %s: the PS's busiest node (%s) takes %.2f\u00d7 the ring's busiest (%s).",
      n, k, s, HumanBytes(ps.largest_shard_ingress), HumanBytes(ring.busiest_node),
      ps.busiest_node_name, ps.busiest_node / std::max(ring.busiest_node, 1.0),
      ring.busiest_node_name));
  lines.push_back(absl::StrFormat(
      "As N grows a ring link stays below 2K while a shard's ingress grows as N\u00b7K/S: the "
      "PS's busiest node carries less only while N/S < 2(N\u22121)/N (here N/S = %.3g).",
      static_cast<double>(n) / std::max(s, 1)));
  if (!c.link_rate.empty()) {  // ringside lab: what its bound rows are
    std::string shard_note;
    if (absl::StartsWith(job.ps.bottleneck_node, "ps-")) {
      shard_note = absl::StrFormat(
          " Both directions of a shard's link are busy at once: a shard answers each part as "
          "soon as every worker has pushed it, so the reply trails the last push by one segment "
          "of every worker. A shard that answered after the whole step would need twice that "
          "(%s).",
          HumanSeconds(2 * job.ps.bound_seconds_per_step));
    }
    lines.push_back(absl::StrCat(
        "The bound at ", LinkRatesText(c),
        " is, over every node, the busier direction of its link \u00f7 its rate, at the node "
        "that takes longest (every link is shaped each way, full duplex).",
        shard_note, " What each mode waits for:"));
    for (const ModeReport* mode : JobRuns(job)) {
      if (!mode->bottleneck.empty()) lines.push_back(mode->bottleneck + ".");
    }
  }
  if (job.ps_colocated.has_value()) {
    for (std::string& line : ColocatedLines(job)) lines.push_back(std::move(line));
  }
  if (job.ring.completed && job.ps.completed) {
    lines.push_back(absl::StrCat("Measured share of a step spent synchronising: ring ",
                                 Percent(job.ring.sync_share), ", ps ", Percent(job.ps.sync_share),
                                 "."));
  }
  return lines;
}

std::vector<std::string> EventLines(const JobComparison& job) {
  std::vector<std::string> lines;
  for (const ModeReport* mode : JobRuns(job)) {
    const std::string prefix = absl::StrCat(RunName(*mode), ": ");
    if (!mode->completed) {
      lines.push_back(absl::StrCat(
          prefix, "FAILED: ", mode->failure.empty() ? "no reason given" : mode->failure));
    }
    for (const std::string& event : mode->events) lines.push_back(prefix + event);
    if (mode->completed && mode->events.empty() && mode->final_world > 0 &&
        mode->final_world < job.config.workers) {
      lines.push_back(absl::StrCat(prefix, "ended with ", mode->final_world, " of ",
                                   job.config.workers, " workers"));
    }
  }
  return lines;
}

}  // namespace ringside::cli
