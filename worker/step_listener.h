// What an elastic trainer tells the parts that follow its steps (worker/elastic_training.h):
// the step's timeline and trace, the test evaluation, the checkpoints and the sampled wire error
// are listeners, called in that order after each completed step, so none of them is a concern
// of the step loop itself. Thread-compatible: the trainer's thread calls them.
#ifndef RINGSIDE_WORKER_STEP_LISTENER_H_
#define RINGSIDE_WORKER_STEP_LISTENER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/training_options.h"
#include "worker/data_parallel.h"
#include "worker/member_state.h"

namespace ringside::worker {

// The generation a step was trained in, as the trainer adopted it.
struct GenerationView {
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  WorkerSlot slot;
  uint64_t checkpoint_every = 0;   // the controller's; 0: no checkpoints
  bool shards_hold_state = false;  // ps mode under --staleness, async or --backup_workers
};

// One completed step, as its listeners see it.
struct CompletedStep {
  int64_t step = 0;       // the step trained
  int64_t completed = 0;  // steps completed after it (more than step + 1 when it skipped ahead)
  const GenerationView& generation;
  const StepTiming& timing;  // its phases, as `ringside_step_seconds` recorded them
  const GradientStats& stats;
  const MemberState& state;  // after the step
};

class StepListener {
 public:
  virtual ~StepListener() = default;
  // A step is about to be trained; `state` holds the parameters it computes on.
  virtual void BeforeStep(const GenerationView& generation, const MemberState& state) {}
  // After the step. An error fails the generation (the step stays completed): the next
  // generation mends what failed; a listener that only costs durability logs and returns OK.
  virtual absl::Status AfterStep(const CompletedStep& step) = 0;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_STEP_LISTENER_H_
