// The prose beside a job's table (cli/report/explanations.h): how test accuracy and the time to
// target were measured, the cost model with the job's numbers, and the runs' events.
#include "cli/report/explanations.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/accuracy_summary.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"
#include "cli/report/model_prediction.h"
#include "common/cost_model.h"

namespace ringside::cli {
namespace {

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

}  // namespace

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
