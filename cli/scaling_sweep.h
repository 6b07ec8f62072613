// `ringside compare --workers=1,2,4,8 [--ps_shards=1,2]`: a scaling sweep. Every job runs on
// one cluster per worker count in both modes (the ring at the first shard count, whose shards
// it does not use) and, for every further shard count, in ps mode again; one cluster at a time.
// Each mode's report gets `scaling`, one ScalingPoint per cluster, with the efficiency
//   samples/s(N) ÷ (N/N0 × samples/s(N0)),  N0 the smallest swept N (1 when swept),
// and the model's step time at N (ScalingModel below), which the report draws against the
// measurement. The rest of the job's report (table, JSON top level) is the largest N's run at
// the first shard count.
//
// Thread-compatible (runs clusters one after another). Errors: as RunJobComparison.
#ifndef RINGSIDE_CLI_SCALING_SWEEP_H_
#define RINGSIDE_CLI_SCALING_SWEEP_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/commands.h"
#include "cli/compare_run.h"
#include "cli/report/compare_report.h"

namespace ringside::cli {

// "4" or "1,2,4,8": positive counts, at most `max`, no repeats, returned ascending.
// INVALID_ARGUMENT names `flag` and the bad element.
absl::StatusOr<std::vector<int>> ParseCountList(absl::string_view flag, absl::string_view text,
                                                int max);

// More than one worker count or shard count.
bool IsSweep(const CompareOptions& options);

// Job `job_index` of the session's options at every swept size (RunJobComparison).
absl::StatusOr<JobComparison> RunScalingSweep(const CompareSession& session, int job_index);

// Fills every point's efficiency and model, and the mode's baseline and bandwidth, from the
// measured points (pure). Per shard count, the baseline N0 is the smallest completed N. The
// model: compute(N) = compute(N0)·N0/N (each worker's slice of the fixed global batch shrinks
// as 1/N), update(N) = update(N0) (every worker updates all K parameters), sync(N) = the cost
// model's busiest-node bytes at N ÷ a bandwidth: `link_bytes_per_second` when a link rate is
// known (the lab), else calibrated on the first shard count's smallest completed N with
// traffic (its bytes ÷ its measured sync time).
void FillScalingModel(ModeReport& mode, const JobConfig& config, double link_bytes_per_second);

// The sweep's table (one row per point, both modes) and what the report says about it.
void PrintScalingTable(const JobComparison& job, std::ostream& out);
// Where the model and the measurement part and why, from the table's rows: efficiency at the
// largest N (of the first shard count); every size, at every shard count, where the measured
// step is over 25% off the model, each with measured ÷ model (or, none being off, the furthest);
// and compute beside sync at the first such row (`cores`: this machine's, to name CPU contention
// when workers outnumber them).
std::vector<std::string> ScalingExplanation(const ModeReport& mode, int cores);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_SCALING_SWEEP_H_
