// The part of `ringside compare` that runs one job on local clusters and measures it
// (cli/compare_command.cc), shared with the scaling sweep (cli/scaling_sweep.h), which runs it
// once per cluster size. Not thread-safe (one cluster at a time: they share the machine).
#ifndef RINGSIDE_CLI_COMPARE_RUN_H_
#define RINGSIDE_CLI_COMPARE_RUN_H_

#include <ostream>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/commands.h"
#include "cli/compare_report.h"
#include "worker/timeline.h"

namespace ringside::cli {

struct ClusterShape {
  int workers = 4;
  int ps_shards = 2;
  // Part of a sweep: the checkpoint directory gets "-n<workers>-s<shards>", so no two sizes
  // resume each other's state.
  bool swept = false;
};

// The job's configuration as the reports print it, for a cluster of `shape`.
absl::StatusOr<JobConfig> JobConfigOf(const TrainingOptions& job, ClusterShape shape);

// Runs `job` once per mode in `modes`, in that order, each on a fresh cluster of `shape`, and
// fills their reports (and the parity when both ran). A mode that fails is recorded in its
// report and in `failed` (the first failure); the modes after it are not run. A signal returns
// CANCELLED. With `timeline` non-null every worker writes a timeline, appended there named by
// mode, size and job (pids still the ranks: the caller renumbers).
absl::StatusOr<JobComparison> RunJobComparison(const CompareOptions& options, int job_index,
                                               const TrainingOptions& job, ClusterShape shape,
                                               const std::vector<SyncMode>& modes,
                                               const TerminationSignals& signals, std::ostream& out,
                                               absl::Status& failed,
                                               std::vector<worker::TimelineProcess>* timeline);

// Every cluster's worker timelines as one Chrome trace at `path` (atomically), times shifted
// so the first event is at 0.
absl::Status WriteMergedTimeline(const std::vector<worker::TimelineProcess>& processes,
                                 const std::string& path);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPARE_RUN_H_
