#include "cli/report/verdict_reason.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"

namespace ringside::cli {
namespace {

// What a run's busiest node is, as a clause names it: "busiest link", "shard", "worker".
std::string NodeKind(const ModeReport& run) {
  if (run.busiest_node.rfind("ps-", 0) == 0) return "shard";
  return run.mode == SyncMode::kRing ? "busiest link" : "busiest worker";
}

// The sync time one step's busiest-node bytes took: the median where traced, else the mean.
double SyncSeconds(const ModeReport& run) {
  return run.sync_p50 > 0 ? run.sync_p50 : run.phases.sync;
}

// The compute phase likewise: the median where traced, else the mean. The verdict's step time is
// a median, so its terms are too: a mean can move the other way (a few slow syncs).
double ComputeSeconds(const ModeReport& run) {
  return run.compute_p50 > 0 ? run.compute_p50 : run.phases.compute;
}

std::string Rate(const ModeReport& run) {
  const double seconds = SyncSeconds(run);
  return seconds > 0 ? absl::StrCat(HumanBytes(run.busiest_node_bytes_per_step / seconds), "/s")
                     : "an unmeasured rate";
}

DecidingTerm BySync(const ModeReport& w, const ModeReport& l) {
  const std::string wn = RunName(w), ln = RunName(l);
  if (!l.straggler.empty() && l.synchronous) {
    return {"straggler", absl::StrCat(ln, " waited for the straggler (", l.straggler,
                                      ") in every step's sync: ", HumanSeconds(SyncSeconds(l)),
                                      " against ", wn, "'s ", HumanSeconds(SyncSeconds(w)))};
  }
  if (w.busiest_node_bytes_per_step < l.busiest_node_bytes_per_step) {
    return {"bandwidth",
            absl::StrCat(wn, ": its ", NodeKind(w), " carried ",
                         HumanBytes(w.busiest_node_bytes_per_step), "/step against ",
                         NodeKind(l) == "shard" ? "the shard" : ln + "'s " + NodeKind(l), "'s ",
                         HumanBytes(l.busiest_node_bytes_per_step), "/step (at ", Rate(w), " and ",
                         Rate(l), " achieved)")};
  }
  return {
      "rate",
      absl::StrCat(ln, "'s busiest node carried less (", HumanBytes(l.busiest_node_bytes_per_step),
                   "/step against ", wn, "'s ", HumanBytes(w.busiest_node_bytes_per_step),
                   ") but achieved only ", Rate(l), " against ", Rate(w),
                   ": its sync is bound by rounds, latency or CPU per byte, not bandwidth")};
}

DecidingTerm ByCompute(const JobConfig& config, const ModeReport& w, const ModeReport& l) {
  const std::string wn = RunName(w), ln = RunName(l);
  const std::string phases =
      absl::StrCat(ln, "'s compute phase took ", HumanSeconds(ComputeSeconds(l)), "/step against ",
                   wn, "'s ", HumanSeconds(ComputeSeconds(w)), " for the same work");
  if (config.has_test_set && l.eval_seconds_mean > 1.1 * w.eval_seconds_mean) {
    return {"evaluation", absl::StrCat(phases, ", while its evaluations on the same cores took ",
                                       HumanSeconds(l.eval_seconds_mean), " each against ",
                                       HumanSeconds(w.eval_seconds_mean))};
  }
  return {"compute",
          absl::StrCat(phases, l.mode == SyncMode::kPs ? " (its shards share the machine's cores)"
                                                       : " (the machine's cores were busier)")};
}

}  // namespace

DecidingTerm ExplainWin(const JobConfig& config, const ModeReport& winner, const ModeReport& loser,
                        bool by_steps) {
  if (by_steps && winner.steps_to_target.has_value() && loser.steps_to_target.has_value() &&
      *winner.steps_to_target < *loser.steps_to_target) {
    const double steps = static_cast<double>(*loser.steps_to_target) / *winner.steps_to_target;
    const double step_time = winner.step_p50 > 0 ? loser.step_p50 / winner.step_p50 : 1;
    if (steps >= step_time) {
      return {"steps",
              absl::StrFormat("%s needed %s steps to the target against %s's %s (%.2f\u00d7), "
                              "at %.2f\u00d7 the step time",
                              RunName(winner), WithThousands(*winner.steps_to_target),
                              RunName(loser), WithThousands(*loser.steps_to_target), steps,
                              step_time > 0 ? 1 / step_time : 1)};
    }
  }
  const double compute = ComputeSeconds(loser) - ComputeSeconds(winner);
  const double sync = SyncSeconds(loser) - SyncSeconds(winner);
  const double update = loser.phases.update - winner.phases.update;
  // A phase that moved far less than the step did explains nothing: the steps differ in how
  // their phases vary, which no one phase's figure shows.
  const double steps = loser.step_p50 - winner.step_p50;
  if (steps > 0 && std::max({compute, sync, update}) < steps / 4) {
    return {"spread", absl::StrCat("no phase explains it: the step medians differ by ",
                                   HumanSeconds(steps), ", no phase's by more than ",
                                   HumanSeconds(std::max({compute, sync, update, 0.0})))};
  }
  if (sync >= compute && sync >= update) return BySync(winner, loser);
  if (compute >= update) return ByCompute(config, winner, loser);
  return {"update", absl::StrCat(RunName(loser), "'s update phase took ",
                                 HumanSeconds(loser.phases.update), "/step against ",
                                 RunName(winner), "'s ", HumanSeconds(winner.phases.update))};
}

}  // namespace ringside::cli
