// The part of `ringside compare` that runs one job on local clusters and measures it
// (cli/compare_command.cc; one mode's cluster: cli/compare_mode.h), shared with the scaling
// sweep (cli/scaling_sweep.h), which runs it once per cluster size. Not thread-safe (one cluster
// at a time: they share the machine).
#ifndef RINGSIDE_CLI_COMPARE_RUN_H_
#define RINGSIDE_CLI_COMPARE_RUN_H_

#include <ostream>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/commands.h"
#include "cli/report/compare_report.h"
#include "worker/timeline.h"

namespace ringside::cli {

struct ClusterShape {
  int workers = 4;
  int ps_shards = 2;
  // Part of a sweep: the checkpoint directory gets "-n<workers>-s<shards>", so no two sizes
  // resume each other's state.
  bool swept = false;
  // ps with shard i beside worker i (--colocate, ps_shards == workers).
  bool colocated = false;
  // --repeats: this cluster's round (0 first) of `repeats`. Rounds after the first get
  // "-r<round + 1>" on their checkpoint directory, so no repeat resumes another's state.
  int repeat = 0, repeats = 1;
};

// What every cluster of one `ringside compare` shares. The references must outlive the runs.
struct CompareSession {
  const CompareOptions& options;
  const TerminationSignals& signals;  // a signal stops the cluster running (CANCELLED)
  std::ostream& out;                  // progress, lost processes, failures
  // The first mode that failed; once set, no further cluster starts.
  absl::Status& failed;
  // Non-null (--timeline): every worker writes a timeline, appended here with its pid renumbered
  // (1000 × the cluster's ordinal + rank) and named by mode, size and job.
  std::vector<worker::TimelineProcess>* timeline = nullptr;
};

// The job's configuration as the reports print it, for a cluster of `shape`.
absl::StatusOr<JobConfig> JobConfigOf(const TrainingOptions& job, ClusterShape shape);

// Runs job `job_index` of the session's options once per mode in `modes`, in that order (ps: once
// per --ps_variants variant), then once per --compression_variants codec and mode of `modes` it
// runs in, each on a fresh cluster of `shape`, and fills their reports (and the parity when both
// plain modes ran). A mode
// that fails is recorded in its report and in `session.failed` (the first failure); the modes
// after it are not run. A signal returns CANCELLED.
absl::StatusOr<JobComparison> RunJobComparison(const CompareSession& session, int job_index,
                                               ClusterShape shape,
                                               const std::vector<SyncMode>& modes);

// Every cluster's worker timelines as one Chrome trace at `path` (atomically), times shifted
// so the first event is at 0.
absl::Status WriteMergedTimeline(const std::vector<worker::TimelineProcess>& processes,
                                 const std::string& path);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPARE_RUN_H_
