// One elastic member's copy of the job's state, what its regroup, its steps and its checkpoints
// read and write, and where the job's state lives: with every worker (each holds the whole state
// in either sync mode and applies the optimiser itself), or with the shards (--staleness=k, async
// or --backup_workers: the shards apply the updates, and a worker holds only its last pull).
// Thread-compatible: the trainer's thread owns it.
#ifndef RINGSIDE_WORKER_MEMBER_STATE_H_
#define RINGSIDE_WORKER_MEMBER_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "common/optimizer.h"

namespace ringside::worker {

// Where the job's state lives between two steps: one value, read by the regroup's census.
enum class StateHome {
  // Every worker holds the whole state; the gradient's buffer is just a buffer.
  kWorkers,
  // The same, and the gradient's buffer still holds the sum the last completed step applied,
  // which a regroup may replay on members one step behind.
  kWorkersWithLastSum,
  // The shards hold it: this worker trained steps whose updates the shards applied, and no
  // regroup since took the state back from them (a failed one leaves it there).
  kShards,
};

struct MemberState {
  std::vector<float> parameters;
  std::unique_ptr<Optimizer> optimizer;  // the job's, in either mode
  std::vector<float> gradient;           // a step's buffer (see StateHome)
  int64_t completed = 0;                 // steps completed
  StateHome home = StateHome::kWorkers;

  bool holds_last_sum() const { return home == StateHome::kWorkersWithLastSum; }
  // The gradient's buffer is about to be overwritten: it no longer holds the last sum.
  void ForgetLastSum() {
    if (home == StateHome::kWorkersWithLastSum) home = StateHome::kWorkers;
  }
  // [parameters..., optimiser state...]'s length.
  size_t state_size() const { return parameters.size() + optimizer->state_size(); }
  // Elements [offset, offset + piece.size()) of [parameters..., optimiser state...]: of `held`
  // (a whole state read elsewhere) when it is not empty, else of this member's own. The piece
  // must lie within the state.
  void ReadPiece(absl::Span<const float> held, size_t offset, absl::Span<float> piece) const;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_MEMBER_STATE_H_
