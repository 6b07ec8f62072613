// Fault injection at named protocol points of a worker, so tests can lose a worker at an exact
// moment of the protocol instead of hoping a kill lands there (`ringside-worker
// --fault_at=POINT[@STEP]`). The worker ends itself with SIGKILL, exactly as `kill -9` would, the
// first time it reaches POINT having completed at least STEP steps. In-process tests pass their
// own FaultHook (ElasticOptions::fault) that stops the trainer there instead.
//
// Why this is in the product rather than behind a test-only seam: the multi-process tests kill
// the real binary, so the binary itself must reach the points. It costs one null check per point
// when unused, and --fault_at is a test-only flag (hidden from --help).
//
// Points (docs/architecture.md lists what the survivors do at each):
//   assigned   a generation was assigned; its regroup has not begun
//   switch     as assigned, for a generation whose mode differs from the last one trained
//   census     before the census collective
//   replay     before the replay of the last step's sum (only in a regroup where a member is one
//              step behind), with the others' gradient buffers about to be overwritten
//   state      before the state collective (the state's header, [ok, step]); in a regroup
//              that hands nothing over (every member level with the source), after the census
//   state_chunk  after the first chunk of the state (ElasticOptions::state_chunk_floats), before
//              the second: the members adopting it hold part of it (only where some member
//              receives the state)
//   load       ps mode, rank 0 only: before loading the shards
//   barrier    ps mode: before the barrier that confirms the load
//   ring_step  ring mode: the gradient is computed, the allreduce not begun (with --bucket_bytes:
//              the step begun, nothing of it sent, before its compute)
//   ring_bucket  ring mode with --bucket_bytes: the step's first bucket is summed, its second not
//              begun, while its compute may still run (on the step's sync thread)
//   ps_push    ps mode: this worker's share reached shard 0 (is on its way, when the shards hold
//              the state) but no other shard
//   leave_sent  an elastic worker sent SIGTERM: the controller took its leave, the worker has
//              not exited (STEP counts as for the others: the steps it completed)
#ifndef RINGSIDE_WORKER_FAULT_INJECTION_H_
#define RINGSIDE_WORKER_FAULT_INJECTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside::worker {

struct FaultPlan {
  std::string point;
  int64_t after_step = 0;
  // Reaching `at` with `completed` steps done: the plan fires there.
  bool FiresAt(absl::string_view at, int64_t completed) const {
    return at == point && completed >= after_step;
  }
};

// "POINT" or "POINT@STEP"; INVALID_ARGUMENT naming the known points otherwise.
absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view text);

// Called at every named point with the steps completed so far; returns true when the worker is
// lost there (it must then stop at once, sending nothing more). Null: no fault injection.
using FaultHook = std::function<bool(absl::string_view point, int64_t completed)>;

// A hook that raises SIGKILL in this process at the plan's point (it never returns true).
FaultHook KillSelfAt(FaultPlan plan);

// A member's fault points as its parts reach them (the trainer, its regroup, its sync): the hook
// asked with the steps completed so far, and the first point it declared the worker lost at
// kept, so each part stops there and the trainer reports where. Thread-compatible: the one point
// reached off the trainer's thread (ring_bucket, on an overlapped step's sync thread) is read
// back once that thread is joined.
class FaultPoints {
 public:
  // `completed` (the member's completed steps) must outlive this.
  FaultPoints(FaultHook hook, const int64_t& completed)
      : hook_(std::move(hook)), completed_(completed) {}
  bool armed() const { return static_cast<bool>(hook_); }
  // True when the hook declares this worker lost at `point`: it must stop at once.
  bool LostAt(absl::string_view point);
  bool lost() const { return !lost_at_.empty(); }
  // ABORTED, naming the point and the steps completed.
  absl::Status LostStatus() const;

 private:
  FaultHook hook_;
  const int64_t& completed_;
  std::string lost_at_;  // empty: not lost
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_FAULT_INJECTION_H_
