// The figures of one run that come from its first worker's step trace (common/cluster_files.h's
// StepTrace): step time p50 and p95, samples/s, the mean time of each phase and the sync share,
// the sync and compute medians, the overlapped share, and the loss over time.
//
// One definition for all of them: the first live worker's steps (worker-0's unless it was lost).
// docs/contract.md fixes samples/s, step p50 and the overlap as worker-0's, so the phases are
// too: the phase chart, the table's compute/sync/update row, samples/s and p50 then describe
// the same steps (the phases once averaged every worker's histogram, and on small runs the two
// pointed different ways).
//
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_STEP_FIGURES_H_
#define RINGSIDE_CLI_REPORT_STEP_FIGURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "common/cluster_files.h"

namespace ringside::cli {

// The value at quantile `q` in [0, 1] of `values` (nearest rank); 0 for none.
double Percentile(std::vector<double> values, double q);

// The first steps of a run that its per-step figures leave out (start-up, not the steady
// state), where the run has more than twice as many.
inline constexpr int64_t kWarmupSteps = 5;

// Fills `report`'s step_p50, step_p95, sync_p50, sync_min, compute_p50, overlap_share,
// samples_per_second (batch_size × steps ÷ their total seconds), phases and sync_share (the
// trace's mean per phase), step_seconds, warmup_steps and warmup_seconds (the first kWarmupSteps
// steps are in none of the others when the trace has more than 2 × kWarmupSteps), loss_over_time
// and first_step_start_seconds from the trace of `worker`, whose cluster was started at
// `cluster_start_unix_seconds`. Unreadable trace lines are reported in `report.events`.
void FillStepFigures(const StepTrace& trace, const std::string& worker, int64_t batch_size,
                     double cluster_start_unix_seconds, ModeReport& report);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_STEP_FIGURES_H_
