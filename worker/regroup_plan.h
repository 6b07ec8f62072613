// What a regroup's members agree on before they train on (worker/elastic_training.cc): each
// member's column of the census, summed over the ring so every member reads every column, and
// the plan every member derives from it alike: where the job's state comes from, and whether the
// members behind replay the last step or receive the state. Pure; thread-compatible.
#ifndef RINGSIDE_WORKER_REGROUP_PLAN_H_
#define RINGSIDE_WORKER_REGROUP_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace ringside::worker {

// The census carries each member's parameter digest in 16-bit parts, exact in a float sum.
constexpr int kDigestParts = 4;
// The census's rows, one float per member each: its completed steps, whether it trained on the
// shards' state, whether it holds the sum its last step applied, whether its state holds a NaN
// or an infinity (1: it is never the source), then its digest's parts.
constexpr size_t kCompletedRow = 0, kOnShardsRow = 1, kLastSumRow = 2, kNonFiniteRow = 3,
                 kFirstDigestRow = 4;
constexpr size_t kCensusRows = kFirstDigestRow + kDigestParts;

// The regroup's census: kCensusRows rows of one float per member, summed over the ring (each
// member fills its own column, zeros elsewhere).
class Census {
 public:
  explicit Census(int world)
      : members_(static_cast<size_t>(world)), values_(kCensusRows * members_, 0.0f) {}
  float& at(size_t row, int member) { return values_[row * members_ + member]; }
  float at(size_t row, int member) const { return values_[row * members_ + member]; }
  absl::Span<float> values() { return absl::MakeSpan(values_); }
  void SetDigest(int member, uint64_t digest) {
    for (int part = 0; part < kDigestParts; ++part) {
      at(kFirstDigestRow + part, member) = static_cast<float>((digest >> (16 * part)) & 0xffff);
    }
  }
  uint64_t digest(int member) const {
    uint64_t digest = 0;
    for (int part = 0; part < kDigestParts; ++part) {
      digest |= static_cast<uint64_t>(at(kFirstDigestRow + part, member)) << (16 * part);
    }
    return digest;
  }

 private:
  size_t members_;
  std::vector<float> values_;
};

// Where the job's state comes from, as every member reads the same census.
struct StatePlan {
  int source = 0;
  float most = 0;  // the source's completed steps, when it is a member
  bool from_shards = false;
  bool from_checkpoint = false;
  // Every member's state holds a NaN or an infinity and the controller holds no checkpoint: the
  // job starts again from the seeded initial state (step 0), on every member alike.
  bool from_initial = false;
  bool replay = false;  // members one step behind replay the source's last step
  // Members the replay does not bring level (two or more steps behind, a joiner, say): the state
  // goes over to them after it. Without a replay the state goes over to every member behind.
  bool left_after_replay = false;
  // Every member holds the source's state already (SameAsSource): nothing is replayed or handed
  // over. A switch between steps, a loss between steps and an elastic job's first generation
  // usually find the members so; the hand-over would send 3K floats (with Adam) for nothing.
  bool level = false;

  // A member already holding the source's state keeps it (the same steps applied to the same
  // state give the same bits in both sync modes; the digest checks it) and needs no room to
  // receive it: at a mode switch, usually every member.
  bool SameAsSource(const Census& census, int member) const {
    return !from_shards && !from_checkpoint && !from_initial &&
           census.at(kNonFiniteRow, member) == 0.0f && census.at(kCompletedRow, member) == most &&
           census.digest(member) == census.digest(source);
  }
  // Whether `member` replays the source's last step: it is exactly one step behind.
  bool Replays(const Census& census, int member) const {
    return replay && !SameAsSource(census, member) &&
           census.at(kCompletedRow, member) + 1.0f == most;
  }
};

// The job's state is the most advanced one: the shards' when they held it (no worker has the
// optimiser's state then, and they are at least as far as any worker: a worker counts a step
// only once the shards applied it); else the most advanced member's (every worker holds the
// whole state in either mode; in ps mode it applies the optimiser to the shards' sums itself),
// or the controller's checkpoint when every member is behind it (a whole cluster restarted).
// Never a state with a NaN or an infinity: a member holding one is no source (it receives the
// state like a member behind); when every member does, the newest checkpoint is the source, or
// without one the seeded initial state (from_initial).
// A switch or a lost worker often supersedes a step that some members had just completed: the
// rest are one step behind, and replay that step from its sum, which the source still holds
// (`replay_allowed`): K floats on the wire instead of the state's 3K for Adam, and no room for
// a second copy of the state (the sum goes into the gradient's buffer, idle between steps). A
// member further behind (a joiner) does not stop the others replaying: it receives the state
// after the replay, and only it needs the room.
StatePlan PlanState(const Census& census, int world, uint64_t checkpoint_step, bool replay_allowed);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_REGROUP_PLAN_H_
