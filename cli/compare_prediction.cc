#include "cli/compare_prediction.h"

#include <algorithm>
#include <optional>

#include "common/model_spec.h"
#include "common/wire_dtype.h"
#include "server/ps/ps_client.h"
#include "worker/gradient_buckets.h"

namespace ringside::cli {
namespace {

std::optional<PlanMode> PlanModeOf(const TrainingOptions& job, const ModeReport& report) {
  if (report.mode == SyncMode::kRing) return PlanMode::kRing;
  if (report.colocated) return PlanMode::kColocatedPs;
  if (job.staleness == kAsyncStaleness) return std::nullopt;  // no barrier, no step the model has
  if (job.staleness > 0) return PlanMode::kPsStaleness;
  if (job.backup_workers > 0) return PlanMode::kPsBackup;
  return PlanMode::kPs;
}

}  // namespace

void FillPrediction(const ClusterCosts& costs, const TrainingOptions& job, const JobConfig& config,
                    int shards, double host_cores, ModeReport& report) {
  const std::optional<PlanMode> mode = PlanModeOf(job, report);
  if (!report.completed || !mode.has_value() || report.final_world < 1) return;
  PlanJob plan_job;
  plan_job.parameters = static_cast<uint64_t>(config.parameters);
  plan_job.element_bytes = config.element_bytes;
  plan_job.global_batch = config.batch_size;
  plan_job.buckets = std::max<int>(1, static_cast<int>(config.ring_buckets.size()));
  plan_job.ps_segment_bytes = server::PsPushSegmentBytes(config.ps_window_bytes);
  PlanCluster cluster;
  cluster.workers = report.final_world;
  cluster.shards = report.colocated ? report.final_world : std::max(1, shards);
  cluster.straggler = job.straggler.worker < report.final_world ? job.straggler.worker : -1;
  cluster.straggler_factor = job.straggler.factor;
  cluster.backup_workers = static_cast<int>(job.backup_workers);
  cluster.staleness = static_cast<int>(std::max<int64_t>(1, job.staleness));
  cluster.shared_host_cores = host_cores;
  absl::StatusOr<StepPrediction> p = PredictStep(*mode, plan_job, cluster, costs);
  if (!p.ok()) return;  // a cluster the model refuses: no prediction rather than a wrong one
  report.predicted_step_seconds = p->step_seconds;
  report.predicted_sync_seconds = p->sync_seconds;
}

absl::StatusOr<StepPrediction> PredictJobStep(const ClusterCosts& costs, const TrainingOptions& job,
                                              PlanMode mode, int workers, int shards,
                                              double host_cores) {
  absl::StatusOr<ModelSpec> spec = ModelSpec::Parse(job.model, job.activation);
  if (!spec.ok()) return spec.status();
  PlanJob plan_job;
  plan_job.parameters = spec->parameter_count();
  plan_job.element_bytes = static_cast<int>(WireBytesPerElement(job.wire_dtype));
  plan_job.global_batch = job.batch_size;
  plan_job.buckets = job.bucket_bytes > 0
                         ? static_cast<int>(worker::PlanBuckets(*spec, job.bucket_bytes).size())
                         : 1;
  plan_job.ps_segment_bytes = server::PsPushSegmentBytes(server::kDefaultPsWindowBytes);
  PlanCluster cluster;
  cluster.workers = workers;
  cluster.shards = mode == PlanMode::kColocatedPs ? workers : shards;
  cluster.straggler = job.straggler.worker;
  cluster.straggler_factor = job.straggler.factor;
  cluster.backup_workers = static_cast<int>(job.backup_workers);
  cluster.staleness = static_cast<int>(std::max<int64_t>(1, job.staleness));
  cluster.shared_host_cores = host_cores;
  return PredictStep(mode, plan_job, cluster, costs);
}

}  // namespace ringside::cli
