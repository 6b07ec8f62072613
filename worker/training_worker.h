// ringside-worker's train job, one lifecycle for static and elastic clusters: serve metrics (and
// RingPeer when the job has a ring), take generations from the controller (--controller) or from
// the command line (a static cluster is one fresh generation that never changes: FixedAssignment),
// train with the one trainer (worker/elastic_training.h), and write the result file, parameters
// and step trace. An elastic worker then stays in the job (heartbeating, serving metrics) until
// SIGINT/SIGTERM: leaving at once could cut a slower peer's last collective short, and
// `ringside up` keeps a cluster between jobs. A static one exits, or with --linger serves
// metrics until a signal.
// Errors: INVALID_ARGUMENT for options that do not fit (message names the flag), the
// registration's status, or the training's.
#ifndef RINGSIDE_WORKER_TRAINING_WORKER_H_
#define RINGSIDE_WORKER_TRAINING_WORKER_H_

#include <ostream>

#include "absl/status/status.h"
#include "common/termination_signals.h"
#include "worker/worker_daemon.h"

namespace ringside::worker {

absl::Status ValidateElasticOptions(const WorkerOptions& options);
absl::Status RunTrainingWorker(const WorkerOptions& options, const TerminationSignals& signals,
                               std::ostream& log);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_TRAINING_WORKER_H_
