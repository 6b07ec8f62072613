// ringside-worker's benchmark jobs (see worker_daemon.h for what each does and writes): the
// driver protocols of `ringside-bench ring` and `ringside-bench ps`.
#ifndef RINGSIDE_DAEMONS_BENCHMARK_JOBS_H_
#define RINGSIDE_DAEMONS_BENCHMARK_JOBS_H_

#include <ostream>

#include "absl/status/status.h"
#include "common/termination_signals.h"
#include "daemons/running_worker.h"

namespace ringside::worker {

absl::Status RunAllreduceJob(const WorkerOptions& options, RunningWorker& worker,
                             const TerminationSignals& signals, std::ostream& log);
absl::Status RunPushPullJob(const WorkerOptions& options, RunningWorker& worker,
                            const TerminationSignals& signals, std::ostream& log);

}  // namespace ringside::worker

#endif  // RINGSIDE_DAEMONS_BENCHMARK_JOBS_H_
