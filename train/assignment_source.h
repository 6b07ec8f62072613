// Where an elastic trainer learns its generations: one plain-struct assignment per generation,
// so the trainer needs nothing of the control protocol's messages. ControllerAssignments
// (controller_assignments.h) adapts the controller's watch stream; tests use a fake controller
// over the real membership rules (control/membership.h) with trainers as threads.
#ifndef RINGSIDE_TRAIN_ASSIGNMENT_SOURCE_H_
#define RINGSIDE_TRAIN_ASSIGNMENT_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "model/training_options.h"

namespace ringside::worker {

// What one generation tells a worker.
struct GenerationAssignment {
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  int rank = -1;                    // -1: this worker has no rank in the generation
  std::vector<std::string> ring;    // RingPeer addresses by rank; world = ring.size()
  std::vector<std::string> shards;  // ParameterShard addresses by shard index
  TrainingOptions job;              // with this worker's own device
};

class AssignmentSource {
 public:
  virtual ~AssignmentSource() = default;

  // The newest assignment once its generation is above `after`. DEADLINE_EXCEEDED at `deadline`
  // (which may be now: a poll); any other error means the source is lost for good.
  virtual absl::StatusOr<GenerationAssignment> WaitForNewer(uint64_t after,
                                                            absl::Time deadline) = 0;

  // The steps this worker has completed, for the controller's view of the job.
  virtual void ReportCompletedSteps(uint64_t steps) = 0;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_TRAIN_ASSIGNMENT_SOURCE_H_
