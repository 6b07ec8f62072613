#include "worker/controller_assignments.h"

#include "common/status_macros.h"
#include "server/controller/job_spec.h"

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
  out.ring_key = assignment.ring_key();
  out.shard_keys.assign(assignment.shard_keys().begin(), assignment.shard_keys().end());
  out.load_keys.assign(assignment.load_keys().begin(), assignment.load_keys().end());
  out.departed_shards.assign(assignment.departed_shards().begin(),
                             assignment.departed_shards().end());
  out.departed_load_keys.assign(assignment.departed_load_keys().begin(),
                                assignment.departed_load_keys().end());
  return out;
}

absl::StatusOr<GenerationAssignment> ControllerAssignments::WaitForNewer(uint64_t after,
                                                                         absl::Time deadline) {
  ASSIGN_OR_RETURN(const proto::Assignment assignment, client_.WaitForAssignment(after, deadline));
  return GenerationAssignmentOf(assignment, device_);
}

}  // namespace ringside::worker
