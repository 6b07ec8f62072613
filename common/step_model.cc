#include "common/step_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cost_model.h"
#include "common/ranges.h"

namespace ringside {
namespace {

// The backward pass's share of a step's compute, which buckets can hide sync behind: two of the
// three matrix products per layer (the gradient of the weights and of the input).
constexpr double kBackwardShare = 2.0 / 3.0;

bool IsPs(PlanMode mode) { return mode != PlanMode::kRing; }

// Every CPU term is slowed by processes sharing cores.
double CpuSlowdown(const ClusterCosts& costs) {
  return 1.0 / std::min(1.0, costs.cores_per_process);
}

uint64_t LargestRange(uint64_t elements, int parts) {
  uint64_t largest = 0;
  for (const ElementRange& range : EvenRanges(elements, parts)) {
    largest = std::max<uint64_t>(largest, range.end - range.begin);
  }
  return largest;
}

int BackupWorkers(const PlanCluster& cluster) {
  return std::clamp(cluster.backup_workers, 0, cluster.workers - 1);
}

// Workers whose gradient a step waits for and uses.
int WaitedForWorkers(PlanMode mode, const PlanCluster& cluster) {
  return mode == PlanMode::kPsBackup ? cluster.workers - BackupWorkers(cluster) : cluster.workers;
}

// The slowest waited-for worker's compute: the straggler's unless a backup worker covers it.
double ComputeSeconds(PlanMode mode, const PlanJob& job, const PlanCluster& cluster,
                      const ClusterCosts& costs) {
  const double rows = std::ceil(static_cast<double>(job.global_batch) / cluster.workers);
  const double normal = rows * costs.compute_seconds_per_sample * CpuSlowdown(costs);
  const bool straggler = cluster.straggler >= 0 && cluster.straggler_factor > 1;
  const bool covered = mode == PlanMode::kPsBackup && BackupWorkers(cluster) >= 1;
  const double slowest = straggler && !covered ? normal * cluster.straggler_factor : normal;
  if (!(cluster.shared_host_cores > 0)) return slowest;
  // A sample took costs.cores_per_process cores (at most the host's): the whole batch's samples
  // share the host's cores, however many workers split it.
  const double measured_cores = std::min(costs.cores_per_process, cluster.shared_host_cores);
  const double host = static_cast<double>(job.global_batch) * costs.compute_seconds_per_sample *
                      measured_cores / cluster.shared_host_cores;
  return std::max(slowest, host);
}

// What the busiest node and the busiest process carry, and the rounds of a step.
struct Traffic {
  uint64_t busiest_elements = 0;   // in the busier direction of the busiest node's link
  uint64_t cpu_elements = 0;       // sent plus received by the busiest process
  uint64_t host_cpu_elements = 0;  // sent plus received by every process
  uint64_t shard_elements = 0;     // summed by the fullest shard
  uint64_t pipeline_bytes = 0;     // the PS segment pipeline's fill and drain on a shard's link
  int rounds = 0;                  // messages in sequence per allreduce or push
  std::string wire_term;
  std::string cpu_term = "sync CPU";
};

Traffic RingTraffic(const PlanJob& job, int workers) {
  Traffic traffic;
  traffic.busiest_elements = RingBusiestNode(job.parameters, workers).elements;
  traffic.cpu_elements = 2 * traffic.busiest_elements;
  // Each of a ring's pieces crosses N − 1 hops in the reduce-scatter and N − 1 in the allgather.
  traffic.host_cpu_elements = 2 * 2 * static_cast<uint64_t>(workers - 1) * job.parameters;
  traffic.rounds = 2 * (workers - 1) * static_cast<int>(RingPieces(job.parameters).size());
  traffic.wire_term = "ring link 2(N−1)/N·K";
  return traffic;
}

// A synchronous shard's reply to a segment leaves once every push of it is in: before the
// first segment is in, the shard's egress has nothing to send, and after the last push its
// ingress is idle while the last reply goes out. `pushes` cross the link, each of `range`
// elements: two segments of each, at most the whole range (a range of one segment is pushed
// whole, then answered whole, and no more). Bounded staleness has no barrier.
uint64_t PipelineBytes(PlanMode mode, const PlanJob& job, int pushes, uint64_t range) {
  if (mode == PlanMode::kPsStaleness || pushes < 1) return 0;
  const uint64_t range_bytes = range * static_cast<uint64_t>(job.element_bytes);
  return static_cast<uint64_t>(pushes) * std::min(2 * job.ps_segment_bytes, range_bytes);
}

Traffic PsTraffic(PlanMode mode, const PlanJob& job, const PlanCluster& cluster) {
  Traffic traffic;
  traffic.rounds = cluster.workers > 1 ? 2 : 0;
  const uint64_t k = job.parameters;
  // Every worker pushes K and is answered K, a colocated one's own range through loopback too.
  traffic.host_cpu_elements = 2 * 2 * static_cast<uint64_t>(cluster.workers) * k;
  if (mode == PlanMode::kColocatedPs) {
    const int n = cluster.workers;
    for (int host = 0; host < n; ++host) {
      traffic.busiest_elements =
          std::max(traffic.busiest_elements, ColocatedPsHostElements(k, n, host));
    }
    traffic.shard_elements = static_cast<uint64_t>(n) * LargestRange(k, n);
    traffic.cpu_elements = std::max(2 * traffic.shard_elements, 2 * k);
    traffic.pipeline_bytes = PipelineBytes(mode, job, n - 1, LargestRange(k, n));  // one is local
    traffic.wire_term = "host link 2(N−1)/N·K";
    return traffic;
  }
  const int pushes = WaitedForWorkers(mode, cluster);
  traffic.pipeline_bytes = PipelineBytes(mode, job, pushes, LargestRange(k, cluster.shards));
  traffic.shard_elements = static_cast<uint64_t>(pushes) * LargestRange(k, cluster.shards);
  traffic.busiest_elements = std::max(traffic.shard_elements, k);
  traffic.cpu_elements = 2 * traffic.busiest_elements;
  const bool shard_busiest = traffic.shard_elements >= k;
  traffic.wire_term = !shard_busiest                ? "worker link K"
                      : mode == PlanMode::kPsBackup ? "shard ingress (N−b)·K/S"
                                                    : "shard ingress N·K/S";
  return traffic;
}

std::string LatencyTerm(PlanMode mode) {
  return mode == PlanMode::kRing ? "2(N−1) rounds of α" : "2 rounds of α";
}

// The largest term of the step names it.
std::string DominantTerm(const StepPrediction& p, const Traffic& traffic, PlanMode mode) {
  const std::pair<double, std::string> terms[] = {
      {p.compute_seconds, "compute"},
      {p.wire_seconds, traffic.wire_term},
      {p.latency_seconds, LatencyTerm(mode)},
      {p.cpu_seconds, traffic.cpu_term},
      {p.shard_seconds, "shard sum rate"},
      {p.pipeline_seconds, "segment pipeline fill and drain"},
  };
  const auto* largest =
      std::max_element(std::begin(terms), std::end(terms),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
  return largest->second;
}

// The sync's CPU: the busiest process's bytes on its own cores, and on a shared host at least
// every process's bytes on the host's cores (which then names the term).
double CpuSeconds(const PlanJob& job, const PlanCluster& cluster, const ClusterCosts& costs,
                  Traffic& traffic) {
  const double seconds_per_element = job.element_bytes * costs.sync_cpu_seconds_per_byte;
  const double process = traffic.cpu_elements * seconds_per_element * CpuSlowdown(costs);
  if (!(cluster.shared_host_cores > 0)) return process;
  const double host = traffic.host_cpu_elements * seconds_per_element / cluster.shared_host_cores;
  if (host > process) traffic.cpu_term = "the shared host's CPU";
  return std::max(process, host);
}

void FillSync(PlanMode mode, const PlanJob& job, const PlanCluster& cluster,
              const ClusterCosts& costs, Traffic& traffic, const StepCalibration& correction,
              StepPrediction& p) {
  const double bytes_per_element = job.element_bytes;
  const double scale = correction.bandwidth_scale;
  p.busiest_bytes = traffic.busiest_elements * static_cast<uint64_t>(job.element_bytes);
  p.wire_seconds = scale * p.busiest_bytes / costs.link_bytes_per_second;
  p.latency_seconds =
      correction.latency_scale * traffic.rounds * job.buckets * costs.link_latency_seconds;
  p.cpu_seconds = scale * CpuSeconds(job, cluster, costs, traffic);
  if (IsPs(mode) && costs.shard_bytes_per_second > 0) {
    p.shard_seconds =
        scale * traffic.shard_elements * bytes_per_element / costs.shard_bytes_per_second;
  }
  p.pipeline_seconds = scale * traffic.pipeline_bytes / costs.link_bytes_per_second;
  p.sync_seconds = p.latency_seconds + std::max({p.wire_seconds, p.cpu_seconds, p.shard_seconds}) +
                   p.pipeline_seconds;
  StepPrediction sync_only = p;
  sync_only.compute_seconds = 0;
  p.sync_term = DominantTerm(sync_only, traffic, mode);
}

}  // namespace

absl::string_view PlanModeName(PlanMode mode) {
  switch (mode) {
    case PlanMode::kRing:
      return "ring";
    case PlanMode::kPs:
      return "ps";
    case PlanMode::kColocatedPs:
      return "ps-colocated";
    case PlanMode::kPsBackup:
      return "ps-backup";
    case PlanMode::kPsStaleness:
      return "ps-staleness";
  }
  return "unknown";
}

absl::StatusOr<StepPrediction> PredictStep(PlanMode mode, const PlanJob& job,
                                           const PlanCluster& cluster, const ClusterCosts& costs,
                                           const PlanCalibration& calibration) {
  if (absl::Status valid = CheckPlanInput(job, cluster, costs); !valid.ok()) return valid;
  const StepCalibration& correction = calibration.of(mode);
  StepPrediction p;
  p.mode = mode;
  p.compute_seconds = correction.compute_scale * ComputeSeconds(mode, job, cluster, costs);
  Traffic traffic =
      mode == PlanMode::kRing ? RingTraffic(job, cluster.workers) : PsTraffic(mode, job, cluster);
  FillSync(mode, job, cluster, costs, traffic, correction, p);
  if (mode == PlanMode::kPsStaleness) {
    // A worker at most k steps ahead pushes step t while it computes step t+1: the step is the
    // longer of the two, the slowest worker's setting the pace.
    p.overlap_seconds = std::min(p.sync_seconds, p.compute_seconds);
  } else if (job.buckets > 1) {
    const double hideable = p.sync_seconds * (job.buckets - 1) / job.buckets;
    p.overlap_seconds = std::min(hideable, p.compute_seconds * kBackwardShare);
  }
  p.step_seconds = p.compute_seconds + p.sync_seconds - p.overlap_seconds;
  const double used_samples =
      static_cast<double>(job.global_batch) * WaitedForWorkers(mode, cluster) / cluster.workers;
  p.samples_per_second = p.step_seconds > 0 ? used_samples / p.step_seconds : 0;
  p.time_to_target_seconds = static_cast<double>(job.steps_to_target) * p.step_seconds;
  p.dominant_term = DominantTerm(p, traffic, mode);
  return p;
}

std::string FormatBitRate(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  const std::pair<double, const char*> units[] = {
      {1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}};
  for (const auto& [scale, name] : units) {
    if (bits >= scale) return absl::StrFormat("%.4g %s", bits / scale, name);
  }
  return absl::StrFormat("%.4g bit/s", bits);
}

}  // namespace ringside
