// ringside-worker --controller: the daemon side of an elastic job. Serves RingPeer and metrics,
// registers with the controller, trains with ElasticTrainer (train/elastic_training.h), writes
// the result file, parameters and step trace, then stays in the job (heartbeating, serving
// metrics) until SIGINT/SIGTERM: leaving at once could cut a slower peer's last collective
// short, and `ringside up` keeps a cluster between jobs.
// Errors: INVALID_ARGUMENT for options that do not fit (message names the flag), the
// registration's status, or the training's.
#ifndef RINGSIDE_DAEMONS_ELASTIC_WORKER_H_
#define RINGSIDE_DAEMONS_ELASTIC_WORKER_H_

#include <ostream>

#include "absl/status/status.h"
#include "common/termination_signals.h"
#include "daemons/worker_daemon.h"

namespace ringside::worker {

absl::Status ValidateElasticOptions(const WorkerOptions& options);
absl::Status RunElasticWorker(const WorkerOptions& options, const TerminationSignals& signals,
                              std::ostream& log);

}  // namespace ringside::worker

#endif  // RINGSIDE_DAEMONS_ELASTIC_WORKER_H_
