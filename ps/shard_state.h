// One parameter-server shard's state machine, without any transport (ps_service.h adapts it to
// gRPC). The shard owns a contiguous range of the flat parameter vector and the optimiser state
// for it. Step t is applied whole or not at all: once every worker of the generation has pushed
// a complete gradient share for step t, the shares are summed in rank order (deterministic,
// whatever order they arrived in) and the shared optimiser (common/optimizer.h) updates the
// range. Workers pre-scale their shares by the global batch size, so the sum is the mean
// gradient of the global batch. The workers are answered with that sum: each applies the same
// optimiser to it, so every worker holds the whole job's state and the shard's copy (the live
// model, GetParameters) is never the only one: a lost shard loses nothing.
//
// Threads. The push calls (BeginPush, AddSegment, FinishPush) run on the caller's thread, gRPC's
// callback threads in the service, and only validate and copy: the pushing thread that completes
// the last share of step t hands the step to the shard's applier thread (one, started by the
// constructor and joined by the destructor) and returns at once. The applier sums, runs the
// optimiser and makes the next parameters without the lock, so pushes, reads and Close() never
// wait for a step's arithmetic; it then publishes the step in one short critical section, so
// parameters() and applied() see the state before a step or after it, never half.
// Shares of step t+1 may be collected while step t is applied. Callbacks registered with
// WhenApplied run outside the lock on the applier thread (or on the caller's, when the step is
// already applied or the state closed). One of them may drop the last reference to the state:
// the destructor then runs on the applier thread and lets it end by itself.
//
// Thread-safe.
// Errors: FAILED_PRECONDITION for a stale generation or a step that is not the current one;
// INVALID_ARGUMENT for an unknown rank, a range length that does not match, a segment out of
// sequence, ragged or too long, or an incomplete share; ALREADY_EXISTS for a second push of the
// same step by the same worker. A refused push changes nothing.
#ifndef RINGSIDE_PS_SHARD_STATE_H_
#define RINGSIDE_PS_SHARD_STATE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"

namespace ringside::server {

struct ShardConfig {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
};

// Null members are not recorded.
struct ShardStepMetrics {
  prometheus::Histogram* wait_seconds = nullptr;    // first push begun -> last push complete
  prometheus::Histogram* update_seconds = nullptr;  // summing and the optimiser step
  prometheus::Counter* steps = nullptr;
};

// Float32 values of the shard's range, shared with the replies that stream them.
using Values = std::shared_ptr<const std::vector<float>>;

class ShardState {
 public:
  // `initial` is the shard's range of the initial parameters.
  static absl::StatusOr<std::unique_ptr<ShardState>> Create(ShardConfig config,
                                                            std::vector<float> initial,
                                                            const OptimizerConfig& optimizer,
                                                            ShardStepMetrics metrics = {});
  // A shard that continues a job: `step` steps applied, `values` the range's parameters after
  // them and `optimizer_state` the range's optimiser state (Optimizer::ExportState layout).
  static absl::StatusOr<std::unique_ptr<ShardState>> Restore(
      ShardConfig config, uint64_t step, std::vector<float> values,
      absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
      ShardStepMetrics metrics = {});
  // Stops the applier: a step handed over and not yet applied is dropped, one being applied is
  // finished first (unless this runs on the applier thread itself, from a WhenApplied callback).
  ~ShardState();
  ShardState(const ShardState&) = delete;
  ShardState& operator=(const ShardState&) = delete;

  // The shard moves to another generation: every worker still waiting for a step is answered
  // with nullptr parameters (its stream ends ABORTED), pushes are refused and no further step
  // is applied. Does not wait for a step being applied.
  void Close();

  absl::Status BeginPush(uint64_t generation, int worker, uint64_t step, uint64_t range_elements);
  absl::Status AddSegment(int worker, uint64_t step, uint64_t offset, absl::string_view payload);
  // The share is complete; the last worker's completion hands the step to the applier thread.
  absl::Status FinishPush(int worker, uint64_t step);
  // Forgets a push that will not be completed (its stream broke). No-op if none is open.
  void AbandonPush(int worker, uint64_t step);

  // Runs `done` with step `step`'s summed gradient once the step has been applied (nullptr once
  // the state is closed).
  void WhenApplied(uint64_t step, std::function<void(Values)> done);

  // The parameters after `step` applied steps, read together.
  struct Applied {
    uint64_t step = 0;
    Values values;
  };
  Applied applied() const;
  uint64_t current_step() const;  // steps applied so far
  Values parameters() const;      // after the last applied step
  uint64_t range_elements() const { return range_elements_; }
  const ShardConfig& config() const { return config_; }

  // Test-only: runs on the applier thread for every step it applies, after the sum and before
  // the optimiser step, without the lock (a test blocks it to hold a step half-applied).
  void SetApplyHookForTesting(std::function<void(uint64_t step)> hook);

 private:
  enum class PushState { kIdle, kPushing, kDone };
  struct WorkerShare {
    PushState state = PushState::kIdle;
    uint64_t received = 0;
    std::vector<float> values;
  };
  // A step whose shares are all complete, waiting for or being applied by the applier.
  struct CompleteStep {
    uint64_t step = 0;
    std::vector<std::vector<float>> shares;  // by rank
    absl::Time first_push;                   // first push begun
    absl::Time last_push;                    // last push complete
  };
  // A state as readers see it; immutable while published.
  struct Published {
    uint64_t step = 0;  // steps applied
    Values values;
    Values sum;  // the summed gradient of step `step - 1`; null before any step
  };
  using Waiters = std::vector<std::pair<uint64_t, std::function<void(Values)>>>;

  ShardState(ShardConfig config, uint64_t step, std::vector<float> values, Optimizer optimizer,
             ShardStepMetrics metrics);
  absl::Status CheckWorker(int worker) const;
  absl::Status CheckStep(uint64_t step) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The applier thread: waits for a complete step, applies it, publishes it, runs its callbacks.
  void ApplyLoop();
  // Sums the shares in rank order and runs the optimiser on the applier's own copy, without
  // the lock.
  Published Apply(CompleteStep& complete, const std::function<void(uint64_t)>& hook);

  const ShardConfig config_;
  const uint64_t range_elements_;
  const ShardStepMetrics metrics_;
  mutable absl::Mutex mu_;
  absl::CondVar step_complete_;  // signalled when complete_ gains a step, or on stopping_

  // The collecting side: shares of step `collecting_`, filled by the pushing threads.
  uint64_t collecting_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<WorkerShare> shares_ ABSL_GUARDED_BY(mu_);
  absl::Time first_push_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::deque<CompleteStep> complete_ ABSL_GUARDED_BY(mu_);  // handed to the applier, in order

  // What readers see: the state after the last applied step.
  Published current_ ABSL_GUARDED_BY(mu_);
  Waiters waiters_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(uint64_t)> apply_hook_ ABSL_GUARDED_BY(mu_);

  // The applier thread's alone once constructed: the working copy of the range and its
  // optimiser (equal to current_ between steps).
  Optimizer optimizer_;
  std::vector<float> values_;
  // Points at a flag on the applier's stack while it runs callbacks: the destructor, run there
  // by a callback that dropped the last reference, sets it so the loop returns at once.
  bool* applier_destroyed_ = nullptr;
  std::thread applier_;  // last: starts once everything above is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_PS_SHARD_STATE_H_
