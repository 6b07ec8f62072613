// The step-time model `ringside plan` predicts with (docs/architecture.md, "The step-time model"):
// for a job (K parameters on the wire, a global batch) on a cluster (N workers, S shards, a link's
// latency and bandwidth, a straggler) the seconds one step takes in each mode, term by term, so a
// user can see which term decides the ranking. The bytes are common/cost_model.h's, exact; the
// seconds are the model's. Pure; thread-safe. Errors: INVALID_ARGUMENT naming the field and the
// value, for a cluster that cannot exist (N = 0, S > K, a rate of 0, a straggler naming no worker).
#ifndef RINGSIDE_COMMON_STEP_MODEL_H_
#define RINGSIDE_COMMON_STEP_MODEL_H_

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/step_calibration.h"

namespace ringside {

// The modes and PS variants the model ranks.
enum class PlanMode {
  kRing,         // ring allreduce
  kPs,           // synchronous PS, S shards on hosts of their own
  kColocatedPs,  // synchronous PS, S = N, shard i beside worker i
  kPsBackup,     // synchronous PS whose step takes the first N - b pushes (--backup_workers)
  kPsStaleness,  // PS with bounded staleness k (--staleness): no barrier, but at most k ahead
};
absl::string_view PlanModeName(PlanMode mode);  // "ring", "ps", "ps-colocated", ...
inline constexpr PlanMode kAllPlanModes[] = {PlanMode::kRing, PlanMode::kPs, PlanMode::kColocatedPs,
                                             PlanMode::kPsBackup, PlanMode::kPsStaleness};

// What the cluster's processes cost: measured by the probe (common/cluster_probe.h) or given.
struct ClusterCosts {
  double link_bytes_per_second = 0;  // 1/β: each node's link, each way (full duplex)
  double link_latency_seconds = 0;   // α: one message's fixed cost (a round of the ring)
  // One sample's forward and backward pass on one worker of normal speed, with its cores.
  double compute_seconds_per_sample = 0;
  // Encode, copy, sum, TLS: a process's CPU seconds per payload byte it sends or receives.
  double sync_cpu_seconds_per_byte = 0;
  // The cores each process gets: below 1, processes share cores and every CPU term is divided
  // by it (CPU contention).
  double cores_per_process = 1;
  // Bytes a shard sums per second (its service rate); 0: not limited by it.
  double shard_bytes_per_second = 0;
};

// The cluster the prediction is for.
struct PlanCluster {
  int workers = 1;              // N >= 1
  int shards = 1;               // S >= 1 (ps, ps-backup, ps-staleness; colocated uses N)
  int straggler = -1;           // rank of the one slow worker; -1: none
  double straggler_factor = 1;  // its compute takes this many times longer (>= 1)
  int backup_workers = 1;       // ps-backup's b, 1 <= b < N (capped at N - 1)
  int staleness = 2;            // ps-staleness's k >= 1
  // > 0: every process of the cluster on one host of this many cores, as `ringside compare` and
  // `lab` run it: the workers' compute and every process's sync CPU add up on those cores.
  // 0: each process on a host of its own, with costs.cores_per_process cores.
  double shared_host_cores = 0;
};

// The job.
struct PlanJob {
  uint64_t parameters = 0;   // K >= 1
  int element_bytes = 4;     // the wire dtype's bytes per element (fp32 4, fp16/bf16 2)
  int64_t global_batch = 0;  // samples per step over all workers, >= N
  // Allreduces (ring) or pushes (ps) per step: --bucket_bytes' buckets; 1 without. The sync of
  // all but the last bucket overlaps the backward pass (two thirds of the compute).
  int buckets = 1;
  int64_t steps_to_target = 0;  // from a run, or given; 0: unknown (no time to target)
  // The PS pushes' segment (server/ps/ps_client.h PsPushSegmentBytes): a shard answers a segment
  // once every worker's push of it is in, so the sync also pays the first segment's arrival and
  // the last one's reply, which no other traffic of the shard's link overlaps. 0: not modelled.
  uint64_t ps_segment_bytes = 0;
};

// One mode's prediction, term by term (seconds per step unless named otherwise).
struct StepPrediction {
  PlanMode mode = PlanMode::kRing;
  double compute_seconds = 0;  // the slowest waited-for worker's forward and backward pass
  double wire_seconds = 0;     // the busiest node's bytes ÷ the link's rate
  double latency_seconds = 0;  // rounds × α
  // The busiest process's sync bytes × CPU seconds per byte; on a shared host, at least every
  // process's ÷ its cores.
  double cpu_seconds = 0;
  double shard_seconds = 0;  // a shard's ingress ÷ its service rate (ps modes)
  // PS: the segment pipeline's fill and drain, a shard's pushes × min(2 segments, its range)
  double pipeline_seconds = 0;
  // latency + max(wire, cpu, shard) + pipeline: segments pipeline the three
  double sync_seconds = 0;
  double overlap_seconds = 0;         // sync hidden behind the backward pass (buckets)
  double step_seconds = 0;            // compute + sync - overlap
  double samples_per_second = 0;      // samples that reach the update per second
  double time_to_target_seconds = 0;  // steps_to_target × step; 0 when unknown
  uint64_t busiest_bytes = 0;  // the busiest node's payload per step, in its busier direction
  // The term that dominates the step: "compute", or the sync term by what it is
  // ("shard ingress N·K/S", "ring link 2(N−1)/N·K", "2(N−1) rounds of α", "sync CPU",
  // "the shared host's CPU", ...).
  std::string dominant_term;
  std::string sync_term;  // the largest of the sync's terms, named as above
};

// Each mode's correction from measured runs (common/step_calibration.h); the identity unless
// `ringside plan --calibrate` fitted one.
struct PlanCalibration {
  StepCalibration modes[std::size(kAllPlanModes)];
  const StepCalibration& of(PlanMode mode) const { return modes[static_cast<int>(mode)]; }
  StepCalibration& of(PlanMode mode) { return modes[static_cast<int>(mode)]; }
};

// The checks the model needs (see the header comment); `mode` decides which fields matter.
absl::Status CheckPlanInput(const PlanJob& job, const PlanCluster& cluster,
                            const ClusterCosts& costs);

// One mode's step. CheckPlanInput first (its error is returned). A calibration scales the
// compute, the latency term and the bandwidth terms (wire, CPU, shard) before the sync, the
// overlap and the step.
absl::StatusOr<StepPrediction> PredictStep(PlanMode mode, const PlanJob& job,
                                           const PlanCluster& cluster, const ClusterCosts& costs,
                                           const PlanCalibration& calibration = {});

// Every mode's prediction, fastest first (by time to target when known, else step time; ties in
// kAllPlanModes' order), and what decides first against second.
struct PlanRanking {
  std::vector<StepPrediction> modes;  // fastest first
  double runner_up_margin = 0;        // second's step (or time to target) ÷ first's, >= 1
  // The term in which the runner-up loses most against the winner, with its rate
  // ("shard ingress N·K/S at 10 Gbit/s", "compute of straggler worker-3 at 3×").
  std::string deciding_term;
};
absl::StatusOr<PlanRanking> RankModes(const PlanJob& job, const PlanCluster& cluster,
                                      const ClusterCosts& costs,
                                      const PlanCalibration& calibration = {});

// A rate in bits per second as people write it: "10 Gbit/s", "100 Mbit/s", "1.5 kbit/s".
std::string FormatBitRate(double bytes_per_second);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STEP_MODEL_H_
