// Every measurement is also a check: the step model's prediction (common/step_model.h) for one
// compare or lab run, from the costs of `--probe=FILE` (lab: its links at --link_rate), set
// beside the run's measured step and sync. Pure; thread-safe. Fills nothing for a run the model
// does not describe (async staleness, a failed run).
#ifndef RINGSIDE_CLI_COMPARE_PREDICTION_H_
#define RINGSIDE_CLI_COMPARE_PREDICTION_H_

#include "absl/status/statusor.h"
#include "cli/report/compare_report.h"
#include "common/step_model.h"
#include "common/training_options.h"

namespace ringside::cli {

// Sets report.predicted_step_seconds and predicted_sync_seconds for `report`'s mode on
// report.final_world workers and `shards` shards (colocated when report.colocated), every
// process on one host of `host_cores` cores (PlanCluster::shared_host_cores).
void FillPrediction(const ClusterCosts& costs, const TrainingOptions& job, const JobConfig& config,
                    int shards, double host_cores, ModeReport& report);

// The step model's step for `job` (its model, batch, wire dtype, buckets, straggler, variants)
// in `mode` on `workers` workers and `shards` shards, every process on one host of `host_cores`
// cores: what `ringside up --probe` exports.
absl::StatusOr<StepPrediction> PredictJobStep(const ClusterCosts& costs, const TrainingOptions& job,
                                              PlanMode mode, int workers, int shards,
                                              double host_cores);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPARE_PREDICTION_H_
