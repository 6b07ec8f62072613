// Test-only fault injection at named protocol points of an elastic worker, so tests can lose a
// worker at an exact moment of the protocol instead of hoping a kill lands there
// (`ringside-worker --fault_at=POINT[@STEP]`). The worker ends itself with SIGKILL, exactly as
// `kill -9` would, the first time it reaches POINT having completed at least STEP steps; in
// in-process tests the trainer stops there instead (LoseAt).
//
// Points (docs/architecture.md lists what the survivors do at each):
//   assigned   a generation was assigned; its regroup has not begun
//   switch     as assigned, for a generation whose mode differs from the last one trained
//   census     before the census collective
//   state      before the state collective
//   load       ps mode, rank 0 only: before loading the shards
//   barrier    ps mode: before the barrier that confirms the load
//   ring_step  ring mode: the gradient is computed, the allreduce not begun
//   ps_push    ps mode: this worker's share reached shard 0 but no other shard
#ifndef RINGSIDE_WORKER_FAULT_INJECTION_H_
#define RINGSIDE_WORKER_FAULT_INJECTION_H_

#include <cstdint>
#include <functional>
#include <string>

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

// For trainers as threads in one process: returns true at the plan's point, so the trainer
// stops there as if killed (its test then cuts its links and drops it from the membership).
FaultHook LoseAt(FaultPlan plan);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_FAULT_INJECTION_H_
