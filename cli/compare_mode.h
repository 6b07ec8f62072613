// One mode's run in `ringside compare`: a fresh local cluster in a directory of its own, run to
// its end while a progress line shows its steps and workers lost on the way are reported, then
// measured from the processes' own /metrics, result files, step traces, evaluations and
// timelines. RunJobComparison (cli/compare_run.h) runs it once per mode of a job and cluster
// size. Not thread-safe: one cluster at a time (they share the machine).
#ifndef RINGSIDE_CLI_COMPARE_MODE_H_
#define RINGSIDE_CLI_COMPARE_MODE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/compare_run.h"
#include "cli/report/compare_report.h"
#include "worker/timeline.h"

namespace ringside::cli {

// What one mode's run needs besides the session: which job, its configuration as the reports
// print it, the cluster's size, the mode and the job's settings as this run trains it (the
// session's job, or a --ps_variants or --compression_variants variant of it). The references must
// outlive the run.
struct ModeRunSpec {
  const CompareSession& session;
  int job_index = 0;
  const JobConfig& config;
  ClusterShape shape;
  SyncMode mode = SyncMode::kRing;
  const TrainingOptions& training;
  // The --ps_variants item ("staleness=2") or --compression_variants codec ("randomk:0.01");
  // empty: the job as given.
  std::string variant = {};

  const TrainingOptions& job() const { return training; }
};

struct ModeRun {
  ModeReport report;
  std::vector<float> parameters;                  // the first surviving worker's, at the end
  std::vector<worker::TimelineProcess> timeline;  // with the session's timeline only
};

// Runs `spec` in a fresh directory, which is kept, and named, when a process failed or the run
// did (not when a signal stopped it): its logs are the post-mortem. Every process that ends
// without being asked to is printed with its log's last lines and added to `failures`, which
// the caller keeps even when the run fails. CANCELLED: a signal stopped it (every child
// stopped); ABORTED: the controller or a shard died; UNAVAILABLE: no worker survived to report.
absl::StatusOr<ModeRun> RunMode(const ModeRunSpec& spec, std::vector<ProcessFailure>& failures);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPARE_MODE_H_
