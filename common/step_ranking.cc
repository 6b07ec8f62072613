// The step model's input checks and its ranking of the modes (common/step_model.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/step_model.h"

namespace ringside {
namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::Status CheckShape(const PlanCluster& cluster, uint64_t parameters) {
  if (cluster.workers < 1) {
    return Invalid(absl::StrCat("workers: N = ", cluster.workers, " cannot exist; give 1 or more"));
  }
  if (cluster.shards < 1) {
    return Invalid(
        absl::StrCat("ps_shards: S = ", cluster.shards, " cannot exist; give 1 or more"));
  }
  if (static_cast<uint64_t>(cluster.shards) > parameters) {
    return Invalid(absl::StrCat("ps_shards: S = ", cluster.shards, " is more than the model's K = ",
                                parameters, " parameters: a shard would hold none"));
  }
  if (cluster.straggler >= cluster.workers || cluster.straggler < -1) {
    return Invalid(absl::StrCat("straggler: worker-", cluster.straggler, " names no worker of ",
                                cluster.workers, " (worker-0 to worker-", cluster.workers - 1,
                                ")"));
  }
  if (!(cluster.straggler_factor >= 1) || !std::isfinite(cluster.straggler_factor)) {
    return Invalid(absl::StrCat("straggler: factor ", cluster.straggler_factor,
                                " must be finite and at least 1 (how many times slower)"));
  }
  if (!(cluster.shared_host_cores >= 0) || !std::isfinite(cluster.shared_host_cores)) {
    return Invalid(absl::StrCat("shared host cores ", cluster.shared_host_cores,
                                " must be finite and >= 0 (0: a host per process)"));
  }
  if (cluster.backup_workers < 0) return Invalid("backup_workers must be >= 0");
  if (cluster.staleness < 1) return Invalid("staleness must be at least 1 step");
  return absl::OkStatus();
}

absl::Status CheckCosts(const ClusterCosts& costs) {
  if (!(costs.link_bytes_per_second > 0) || !std::isfinite(costs.link_bytes_per_second)) {
    return Invalid(absl::StrCat("link rate ", costs.link_bytes_per_second,
                                " bytes/s cannot exist: a link moves something (e.g. 10gbit)"));
  }
  const std::pair<double, const char*> non_negative[] = {
      {costs.link_latency_seconds, "link latency"},
      {costs.compute_seconds_per_sample, "compute seconds per sample"},
      {costs.sync_cpu_seconds_per_byte, "sync CPU seconds per byte"},
      {costs.shard_bytes_per_second, "shard service rate"},
  };
  for (const auto& [value, name] : non_negative) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return Invalid(absl::StrCat(name, " ", value, " must be finite and >= 0"));
    }
  }
  if (!(costs.cores_per_process > 0) || !std::isfinite(costs.cores_per_process)) {
    return Invalid(absl::StrCat("cores per process ", costs.cores_per_process, " must be > 0"));
  }
  return absl::OkStatus();
}

// Seconds per sample that reaches the update: what the ranking orders by.
double SecondsPerSample(const StepPrediction& p) {
  return p.samples_per_second > 0 ? 1 / p.samples_per_second : 0;
}

std::string SyncTermWithRate(const StepPrediction& loser, const ClusterCosts& costs) {
  const double largest = std::max({loser.wire_seconds, loser.cpu_seconds, loser.shard_seconds});
  if (loser.latency_seconds > largest) {
    return absl::StrFormat("%s (α = %.3g ms)", loser.sync_term, costs.link_latency_seconds * 1e3);
  }
  if (loser.wire_seconds >= largest) {
    return absl::StrCat(loser.sync_term, " at ", FormatBitRate(costs.link_bytes_per_second));
  }
  if (loser.cpu_seconds >= largest) {
    return absl::StrFormat("%s at %.3g ns/byte", loser.sync_term,
                           costs.sync_cpu_seconds_per_byte * 1e9);
  }
  return absl::StrCat(loser.sync_term, " at ", FormatBitRate(costs.shard_bytes_per_second));
}

// The term in which `second` loses most per sample against `first`.
std::string DecidingTerm(const StepPrediction& first, const StepPrediction& second,
                         const PlanJob& job, const PlanCluster& cluster,
                         const ClusterCosts& costs) {
  const double first_samples = first.samples_per_second * first.step_seconds;
  const double second_samples = second.samples_per_second * second.step_seconds;
  if (first_samples <= 0 || second_samples <= 0) return "nothing: no sample is trained";
  const double compute_loss =
      second.compute_seconds / second_samples - first.compute_seconds / first_samples;
  const double sync_loss = (second.sync_seconds - second.overlap_seconds) / second_samples -
                           (first.sync_seconds - first.overlap_seconds) / first_samples;
  // Equal to the model's precision: nothing decides.
  const double first_cost = (first.step_seconds) / first_samples;
  if (std::max(compute_loss, sync_loss) <= first_cost * 1e-9) return "nothing: a tie";
  if (sync_loss > compute_loss) return SyncTermWithRate(second, costs);
  const bool slowed = cluster.straggler >= 0 && cluster.straggler_factor > 1 &&
                      second.compute_seconds > first.compute_seconds * 1.000001;
  if (slowed) {
    return absl::StrFormat("compute of straggler worker-%d at %g×", cluster.straggler,
                           cluster.straggler_factor);
  }
  return absl::StrFormat("compute of %d samples per step", job.global_batch);
}

}  // namespace

absl::Status CheckPlanInput(const PlanJob& job, const PlanCluster& cluster,
                            const ClusterCosts& costs) {
  if (job.parameters < 1) return Invalid("the model has no parameters (K = 0)");
  if (job.element_bytes != 2 && job.element_bytes != 4) {
    return Invalid(absl::StrCat("wire element bytes ", job.element_bytes, ": 4 (fp32) or 2"));
  }
  if (absl::Status shape = CheckShape(cluster, job.parameters); !shape.ok()) return shape;
  if (job.global_batch < cluster.workers) {
    return Invalid(absl::StrCat("batch_size: a global batch of ", job.global_batch,
                                " leaves some of N = ", cluster.workers, " workers no sample"));
  }
  if (job.buckets < 1) return Invalid("buckets: at least 1 per step");
  if (job.steps_to_target < 0) return Invalid("steps to target must be >= 0 (0: unknown)");
  return CheckCosts(costs);
}

absl::StatusOr<PlanRanking> RankModes(const PlanJob& job, const PlanCluster& cluster,
                                      const ClusterCosts& costs,
                                      const PlanCalibration& calibration) {
  PlanRanking ranking;
  for (PlanMode mode : kAllPlanModes) {
    absl::StatusOr<StepPrediction> prediction = PredictStep(mode, job, cluster, costs, calibration);
    if (!prediction.ok()) return prediction.status();
    ranking.modes.push_back(*std::move(prediction));
  }
  std::stable_sort(ranking.modes.begin(), ranking.modes.end(),
                   [](const StepPrediction& a, const StepPrediction& b) {
                     return SecondsPerSample(a) < SecondsPerSample(b);
                   });
  const StepPrediction& first = ranking.modes[0];
  const StepPrediction& second = ranking.modes[1];
  const double first_cost = SecondsPerSample(first);
  ranking.runner_up_margin = first_cost > 0 ? SecondsPerSample(second) / first_cost : 1;
  ranking.deciding_term = DecidingTerm(first, second, job, cluster, costs);
  return ranking;
}

}  // namespace ringside
