// Rank 0's checkpoints of an elastic job: every `checkpoint_every` completed steps (the
// controller's, per generation) the job's state goes to the assignment source
// (AssignmentSource::SaveCheckpoint, the controller's durable store): the member's own, read a
// segment at a time from the live state (no copy of the optimiser's state, 2K floats with Adam,
// on the member that uploads), or the shards' when they hold it (--staleness, async,
// --backup_workers), read as a regroup reads it. A checkpoint that cannot be stored costs
// durability, not the step: it is logged and training goes on. A step listener
// (worker/step_listener.h); thread-compatible.
#ifndef RINGSIDE_WORKER_CHECKPOINT_UPLOADS_H_
#define RINGSIDE_WORKER_CHECKPOINT_UPLOADS_H_

#include <cstdint>
#include <ostream>

#include "absl/status/status.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/state_pieces.h"
#include "server/ps/shard_group.h"
#include "worker/assignment_source.h"
#include "worker/step_listener.h"

namespace ringside::worker {

class CheckpointUploads final : public StepListener {
 public:
  // `optimizer` is the job's (the shards' state's layout). Everything passed must outlive this.
  CheckpointUploads(AssignmentSource& assignments, server::ShardGroup& shards,
                    const OptimizerConfig& optimizer, Metrics& metrics, std::ostream& log)
      : assignments_(assignments),
        shards_(shards),
        optimizer_(optimizer),
        metrics_(metrics),
        log_(log) {}

  // Uploads when the step is due; always OK (a failure is logged).
  absl::Status AfterStep(const CompletedStep& step) override;

 private:
  absl::Status SaveIfDue(const CompletedStep& step);
  // Uploads the state of `step` as `read` reads it.
  absl::Status Upload(uint64_t step, uint64_t parameters, uint64_t state_elements,
                      const StatePieceReader& read);

  AssignmentSource& assignments_;
  server::ShardGroup& shards_;
  const OptimizerConfig optimizer_;
  Metrics& metrics_;
  std::ostream& log_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_CHECKPOINT_UPLOADS_H_
