#include "train/controller_assignments.h"

#include "common/status_macros.h"
#include "control/job_spec.h"

namespace ringside::worker {

absl::StatusOr<GenerationAssignment> GenerationAssignmentOf(const proto::Assignment& assignment,
                                                            const std::string& device) {
  GenerationAssignment out;
  out.generation = assignment.generation();
  ASSIGN_OR_RETURN(out.mode, ParseSyncMode(assignment.mode()));
  out.rank = assignment.rank();
  out.world = assignment.ring_size();
  out.ring.assign(assignment.ring().begin(), assignment.ring().end());
  out.shards.assign(assignment.shards().begin(), assignment.shards().end());
  ASSIGN_OR_RETURN(out.job, server::TrainingOptionsOf(assignment.job(), device));
  out.checkpoint_step = assignment.checkpoint_step();
  out.checkpoint_every = assignment.checkpoint_every();
  return out;
}

absl::StatusOr<GenerationAssignment> ControllerAssignments::WaitForNewer(uint64_t after,
                                                                         absl::Time deadline) {
  ASSIGN_OR_RETURN(const proto::Assignment assignment, client_.WaitForAssignment(after, deadline));
  return GenerationAssignmentOf(assignment, device_);
}

}  // namespace ringside::worker
