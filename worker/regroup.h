// The regroup protocol that begins each elastic generation, over the new ring, all of it control
// collectives (not counted as training traffic):
//   1. census: every member's completed steps, whether it trained on the shards' state, whether
//      it holds the sum its last step applied, and its parameters' digest (worker/regroup_plan.h
//      derives the plan from it, alike on every member);
//   2. replay: when a member is exactly one step behind the most advanced one (a switch or a
//      loss superseded a step some had just completed), the first most advanced one still
//      holding the sum its last step applied broadcasts it and the members one step behind
//      apply it: K floats, no second copy of the state; their parameters' digests must then
//      match its, or step 3 follows, as it does for any member further behind (a joiner);
//   3. state: the member with the most completed steps broadcasts its parameters and optimiser
//      state (a sum-allreduce with -0.0 elsewhere, exact) in chunks; when the controller holds a
//      newer checkpoint than any member (a whole cluster restarted), rank 0 reads that and
//      broadcasts it instead, and when a member trained on the shards' state rank 0 reads the
//      shards' (falling back to the checkpoint). A regroup that finds every member level with
//      the source sends nothing after the census;
//   4. ps mode: rank 0 loads the shards with that state for the generation (a replacement shard
//      starts empty), and a barrier tells everyone it did. When the shards hold the state and
//      keep their map (a worker drained under staleness, async or backup workers), rank 0 asks
//      them in step 3 to keep it instead, and only its parameters go over the ring: K floats,
//      not 3K with Adam read, sent and loaded back.
// Collective numbers are (generation << 32) + n, so no two generations' segments can match; the
// training steps' collectives follow the regroup's (kFirstStepCollective).
//
// The fault points it reaches (worker/fault_injection.h): census, replay, state, state_chunk,
// load, barrier. Thread-compatible: the trainer's thread runs it.
#ifndef RINGSIDE_WORKER_REGROUP_H_
#define RINGSIDE_WORKER_REGROUP_H_

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "ring/allreduce.h"
#include "ring/collective.h"
#include "server/ps/shard_group.h"
#include "worker/assignment_source.h"
#include "worker/data_parallel.h"
#include "worker/fault_injection.h"
#include "worker/member_state.h"

namespace ringside::worker {

// Collective numbers within a generation: the regroup's (its census, the replay and its check,
// the state's header, the state itself in chunks, the shard load's barrier), then the training
// steps' from kFirstStepCollective on, every ring collective's number above the one before (the
// inbox's sequence rule).
inline constexpr uint64_t kCensusCollective = 1;
inline constexpr uint64_t kReplayCollective = 2;       // the source's last step's sum
inline constexpr uint64_t kReplayCheckCollective = 3;  // which replayers' parameters differ
inline constexpr uint64_t kStateCollective = 4;
inline constexpr uint64_t kFirstStateChunkCollective = 5;
inline constexpr uint64_t kLoadedCollective = (uint64_t{1} << 24) - 1;
inline constexpr uint64_t kFirstStepCollective = uint64_t{1} << 24;
inline uint64_t CollectiveBase(uint64_t generation) { return generation << 32; }

struct RegroupOptions {
  uint64_t segment_bytes = uint64_t{1} << 20;  // of the control collectives
  absl::Duration timeout = absl::Seconds(60);  // per collective
  // The state goes over in chunks of this many floats (ElasticOptions::state_chunk_floats).
  size_t state_chunk_floats = size_t{1} << 20;
  bool replay_last_step = true;  // ElasticOptions::replay_last_step
  // The generation is in ps mode, the shards hold the state and none departed (the last
  // generation's shard map, usually: a worker left or joined): a hand-over from the shards asks
  // them to keep their state, and only its parameters go over to the members.
  bool shards_may_keep_state = false;
};

// The control collectives' options: sums of the segment size and deadline given.
ring::AllreduceOptions ControlCollectiveOptions(uint64_t segment_bytes, absl::Duration timeout);

// One member's regroup into one generation. Everything passed must outlive it.
class Regroup {
 public:
  // `assignments` reads the controller's checkpoint, `shards` the shards' state (configured for
  // the generation) and loads them; `state` is this member's, which the regroup replaces.
  Regroup(ring::Collective& ring, AssignmentSource& assignments, server::ShardGroup& shards,
          const TrainingJob& job, MemberState& state, FaultPoints& faults, Metrics& metrics,
          std::ostream& log, RegroupOptions options);

  // Steps 1 to 3: every member adopts the job's state. `checkpoint_step` is the controller's
  // newest checkpoint (0: none). A fault point that declares this worker lost returns its
  // status (FaultPoints::lost() then says so).
  absl::Status AgreeOnState(uint64_t generation, int world, int rank, uint64_t checkpoint_step);
  // Step 4 (ps mode): rank 0 loads the shards, and the barrier says whether it did
  // (UNAVAILABLE on every member when not). Nothing when the shards kept their state.
  absl::Status LoadShards(uint64_t generation, int rank);
  // The hand-over found the shards keeping their state (RegroupOptions::shards_may_keep_state):
  // every member holds its parameters, the shards the whole of it (StateHome::kShards).
  bool shards_kept_state() const { return shards_kept_state_; }

 private:
  // The state's hand-over from `source` (a member; rank 0 reading the shards' state, or the
  // controller's checkpoint): [ok, step, kept], then the state in chunks (the parameters alone
  // when the shards kept it); `keeps_own`: this member holds the source's state already and
  // adopts nothing.
  absl::Status HandOverState(uint64_t generation, int rank, uint64_t checkpoint_step, int source,
                             bool from_shards, bool from_checkpoint, bool keeps_own);
  // Sends the state after [ok, step, kept] as chunks of sum-allreduces: the source's (`source`:
  // its own parameters and optimiser, or `held` when it read them elsewhere) and -0.0 elsewhere;
  // `adopt`: this member makes it its own, chunk by chunk (`in_place`: its own state is the
  // initial one, which it can make again), or else once it has all of it. `parameters_only`:
  // the parameters alone (the shards kept the optimiser's state).
  absl::Status BroadcastState(uint64_t base, bool source, bool adopt, bool in_place,
                              bool parameters_only, absl::Span<const float> held);
  // The seeded initial parameters and a fresh optimiser, as at step 0.
  absl::Status RestoreInitialState();
  // Members one step behind the source (`behind`) apply the sum of its last step, which it
  // broadcasts from its gradient buffer, to their own state; then all learn whether every
  // replayer's parameters now have the source's digest (true), or the state must go over whole.
  absl::StatusOr<bool> ReplayLastStep(uint64_t base, int world, int rank, bool source, bool behind,
                                      uint64_t source_digest);
  // Rank 0's part of a hand-over from the shards: their state into `state` ([ok, step,
  // parameters..., optimiser state...]); when it cannot be read (a shard lost), the controller's
  // checkpoint of `checkpoint_step` (0: none); ok 0, and the reason logged, when neither can.
  void ReadShardsState(uint64_t checkpoint_step, absl::Span<float> state);
  // The controller's checkpoint into `state`, likewise.
  void ReadCheckpoint(uint64_t checkpoint_step, absl::Span<float> state);
  // Rank 0 asks the shards to keep their state and reads its parameters into `state` ([ok, step,
  // parameters...]); false, and why logged, when they cannot (ReadShardsState follows).
  bool KeepShardsState(absl::Span<float> state);
  ring::AllreduceOptions ControlOptions() const;

  ring::Collective& ring_;
  AssignmentSource& assignments_;
  server::ShardGroup& shards_;
  const TrainingJob& job_;
  MemberState& state_;
  FaultPoints& faults_;
  Metrics& metrics_;
  std::ostream& log_;
  const RegroupOptions options_;
  bool shards_kept_state_ = false;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_REGROUP_H_
