// Where the trainer learns its generations: one plain-struct assignment per generation, so the
// trainer needs nothing of the control protocol's messages. ControllerAssignments
// (controller_assignments.h) adapts the controller's watch stream; FixedAssignment is a static
// cluster's one generation; tests use a fake controller over the real membership rules
// (server/controller/membership.h) with trainers as threads.
#ifndef RINGSIDE_WORKER_ASSIGNMENT_SOURCE_H_
#define RINGSIDE_WORKER_ASSIGNMENT_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/state_pieces.h"
#include "common/training_options.h"

namespace ringside::worker {

// What one generation tells a worker.
struct GenerationAssignment {
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  int rank = -1;                    // -1: this worker has no rank in the generation
  int world = 0;                    // workers in the generation
  std::vector<std::string> ring;    // RingPeer addresses by rank (empty: no ring, see below)
  std::vector<std::string> shards;  // ParameterShard addresses by shard index
  TrainingOptions job;              // with this worker's own device
  // Every member starts the job afresh from the seeded initial parameters, and the shards
  // (if any) already hold them: no regroup is needed. A static cluster's only generation; it
  // may then have no ring in ps mode. An elastic generation never is (a member may be behind).
  bool fresh_start = false;
  // Durable state (the controller's --checkpoint_dir): the newest checkpoint the source holds
  // (0: none), and every how many completed steps rank 0 uploads one (0: never).
  uint64_t checkpoint_step = 0;
  uint64_t checkpoint_every = 0;
  // Link keys (common/auth.h) this worker presents in this generation: to its right neighbour,
  // to each shard's Step, and (rank 0) to each shard's Load. Empty: none (a static cluster).
  std::string ring_key;
  std::vector<std::string> shard_keys;
  std::vector<std::string> load_keys;
  // Rank 0 only: shards that left still holding their range of the state (a drain under
  // --staleness, async, --backup_workers), with their read keys; a regroup reads them when the
  // shards alone do not cover the parameters (server/ps/shard_transfer.h).
  std::vector<std::string> departed_shards;
  std::vector<std::string> departed_load_keys;
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

  // A collective of `generation` failed on this worker (a message refused, a peer past the
  // collective's deadline): the source is asked for a new generation of the same members, so the
  // job regroups without an operator. The source's status (it may not take reports at all:
  // UNIMPLEMENTED; the trainer then only waits).
  virtual absl::Status ReportFailedGeneration(uint64_t generation) {
    return absl::UnimplementedError("this assignment source forms no generation on request");
  }

  // Durable state: stores the job's state after `step` completed steps, read a piece at a time
  // by `read` (elements [offset, offset + out.size()) of [parameters..., optimiser state...],
  // state_elements in all: the caller keeps no copy), and reads the stored one of `step` back
  // into spans of exactly its sizes. A source without durable state refuses both
  // (UNIMPLEMENTED); it never names a checkpoint, so the trainer never asks.
  virtual absl::Status SaveCheckpoint(uint64_t step, uint64_t parameters, uint64_t state_elements,
                                      const StatePieceReader& read) {
    return absl::UnimplementedError("this assignment source keeps no checkpoints");
  }
  virtual absl::Status LoadCheckpoint(uint64_t step, absl::Span<float> parameters,
                                      absl::Span<float> optimizer_state) {
    return absl::UnimplementedError("this assignment source keeps no checkpoints");
  }
};

// A static cluster (every address on the command line): one fresh generation, and never another.
// A wait for a later one fails at once with FAILED_PRECONDITION (none will come), a poll (a
// deadline already passed) reports DEADLINE_EXCEEDED like any source with nothing new.
class FixedAssignment final : public AssignmentSource {
 public:
  explicit FixedAssignment(GenerationAssignment assignment) : assignment_(std::move(assignment)) {
    assignment_.fresh_start = true;
  }
  absl::StatusOr<GenerationAssignment> WaitForNewer(uint64_t after, absl::Time deadline) override {
    if (after < assignment_.generation) return assignment_;
    if (deadline <= absl::Now()) return absl::DeadlineExceededError("no newer generation");
    return absl::FailedPreconditionError(
        "a static cluster has no other generation: restart it, or start its members with "
        "--controller so that the job survives a lost member");
  }
  void ReportCompletedSteps(uint64_t) override {}

 private:
  GenerationAssignment assignment_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_ASSIGNMENT_SOURCE_H_
