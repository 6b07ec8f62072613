// The HTML report's charts, each one <svg class="chart" id="..."> drawn from one job's numbers:
// - LinkBytesChart: bytes per step on every link of one mode, measured next to the model;
// - PhaseChart: mean step time of each mode, stacked by phase (compute, sync, update);
// - ModelCurveChart: the cost model's bytes per worker (or per busiest node) per step for
//   N = 2..1024 in both modes, for the job's K and S, with the measured points on it;
// - ScalingChart, LossOverTimeChart: a sweep's step times, and loss over wall-clock time;
// - AccuracyOverTimeChart, AccuracyOverBytesChart: test accuracy over wall-clock time and over
//   the bytes one worker sent, with the target accuracy;
// - StepTimeChart: each run's steady step time, its spread over the steps and the repeats.
// With --repeats, the phase and accuracy charts draw each figure's range over the repeats.
// A chart with nothing to draw (a failed mode) still renders, with a "no data" note and no
// marks. Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_REPORT_CHARTS_H_
#define RINGSIDE_CLI_REPORT_REPORT_CHARTS_H_

#include <string>

#include "cli/report/compare_report.h"

namespace ringside::cli {

inline constexpr int kModelMaxWorkers = 1024;

enum class ModelQuantity { kPerWorker, kBusiestNode };

std::string LinkBytesChart(const ModeReport& mode, const std::string& id);
std::string PhaseChart(const JobComparison& job, const std::string& id);
std::string ModelCurveChart(const JobComparison& job, ModelQuantity quantity,
                            const std::string& id);
// A sweep's step time (p50, compute, sync) against N for one mode at `ps_shards` shards, with
// the model's step time (cli/scaling_sweep.h) drawn over it (cli/report/scaling_chart.cc).
std::string ScalingChart(const ModeReport& mode, int ps_shards, const std::string& id);
// Each mode's first-worker loss against seconds since that run's first step began
// (ModeReport::first_step_start_seconds): start-up is not drawn.
std::string LossOverTimeChart(const JobComparison& job, const std::string& id);
// Each mode's test accuracy against seconds since its cluster's first step, a point per
// evaluation, with the job's target accuracy drawn across (cli/report/accuracy_chart.cc).
std::string AccuracyOverTimeChart(const JobComparison& job, const std::string& id);
// The same points against the payload bytes the evaluating worker had sent (AccuracyPoint's
// sent_bytes; points without it are not drawn), with each run's bytes to target.
std::string AccuracyOverBytesChart(const JobComparison& job, const std::string& id);
// Each run's median step time (worker-0, warm-up left out), the 5th to 95th percentile of its
// steps, each repeat's median as a point, and the verdict's interval where step time decided
// (cli/report/step_time_chart.cc).
std::string StepTimeChart(const JobComparison& job, const std::string& id);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_REPORT_CHARTS_H_
