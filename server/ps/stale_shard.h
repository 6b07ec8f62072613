// One parameter-server shard's state under bounded staleness or asynchronous training
// (--staleness=k >= 1 or async; docs/architecture.md "Bounded staleness and async"), without any
// transport. Unlike ShardState (staleness 0), the shard holds the authoritative parameters of its
// range and its optimiser state, and applies each worker's gradient share as it arrives, one
// optimiser step per push: the share (normalised by the global batch, so about 1/N of a mean
// gradient) is scaled by N, the workers of the generation, and stepped with learning rate lr/N,
// so the N updates of one round move the parameters as one synchronous step would (exactly so
// for SGD). Workers push gradients and pull parameters; a worker's pull of step c (the
// parameters it computes step c on) is answered once its own pushes of steps before c are
// applied and server/ps/sync_rules.h MayStartStep lets it start step c given the slowest
// worker's completed steps (async: at once).
//
// Backup workers (--backup_workers=b with staleness 0; Chen et al., "Revisiting distributed
// synchronous SGD", 2016, as TensorFlow's SyncReplicasOptimizer): the quorum mode. The shard sums
// the pushes computed on its current version until N - b of them are in (in arrival order), then
// applies their mean in one optimiser step at the job's learning rate: a step. A push computed on
// an older version is dropped and counted (ringside_ps_dropped_pushes_total), never applied. A
// worker's pull is answered once the version it pushed on is past, with the latest parameters,
// so a slow worker never holds the others back: it computes on the newest parameters and its
// step jumps to their version, skipping the steps it missed (worker/push_pull_sync.h).
//
// Version: updates applied to this range since the state was created (the generation's start;
// in the quorum mode, steps). A push carries the version of the parameters its gradient was
// computed on; the difference to the version it is applied at is its staleness (the histogram
// ringside_ps_update_staleness; always 0 in the quorum mode, which drops what is stale).
//
// Threads. Push and WhenMayStart run on the caller's thread (gRPC's callback threads) and only
// validate and queue; one applier thread (started by the constructor, joined by the destructor)
// runs the optimiser without the lock and publishes each update in a short critical section,
// then runs the callbacks whose condition now holds, outside the lock. Thread-safe.
// Errors: FAILED_PRECONDITION for a closed state or a push ahead of the worker's next step;
// ALREADY_EXISTS for a step the worker already pushed; INVALID_ARGUMENT for an unknown rank, a
// gradient of the wrong size, or a read version the shard has not reached.
// Lifetime: a callback run on the applier thread may drop the last reference to the shard; the
// destructor then lets the applier end by itself instead of joining it
// (server/ps/applier_thread.h).
#ifndef RINGSIDE_SERVER_PS_STALE_SHARD_H_
#define RINGSIDE_SERVER_PS_STALE_SHARD_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "common/training_options.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "server/ps/applier_thread.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

struct StaleShardConfig {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
  int64_t staleness = 1;  // >= 1 or kAsyncStaleness (common/training_options.h)
  // Steps every worker of the generation has completed when it begins (the regroup's).
  uint64_t completed_steps = 0;
  // > 0 (with staleness 0): the quorum mode (see above), a step applied with workers - b pushes.
  int64_t backup_workers = 0;
};

// Null members are not recorded.
struct StaleShardMetrics {
  prometheus::Histogram* staleness = nullptr;  // ringside_ps_update_staleness
  prometheus::Counter* updates = nullptr;
  prometheus::Counter* dropped = nullptr;  // the quorum mode's stale pushes
};

// The parameters a worker computes its next step on.
struct StaleRead {
  uint64_t version = 0;
  // Steps the slowest worker had completed; in the quorum mode, the steps applied.
  uint64_t slowest_completed = 0;
  Values values;
};

class StaleShard {
 public:
  // `values` is the range's parameters; `optimizer_state` its optimiser state in the job's
  // configuration (Optimizer::ExportState layout; empty: a fresh optimiser). `optimizer` is the
  // job's: the shard steps with learning rate lr / workers itself.
  static absl::StatusOr<std::unique_ptr<StaleShard>> Create(StaleShardConfig config,
                                                            std::vector<float> values,
                                                            absl::Span<const float> optimizer_state,
                                                            const OptimizerConfig& optimizer,
                                                            StaleShardMetrics metrics = {});
  ~StaleShard();
  StaleShard(const StaleShard&) = delete;
  StaleShard& operator=(const StaleShard&) = delete;

  // A new generation replaces this one: every waiting pull is answered ABORTED, pushes are
  // refused; an update being applied is finished.
  void Close();

  // Worker `worker`'s gradient share of step `step`, computed on the parameters of
  // `read_version`. Each worker pushes its steps in order, each once (in the quorum mode it may
  // skip steps).
  absl::Status Push(int worker, uint64_t step, uint64_t read_version, std::vector<float> gradient);

  // Runs `done` (on the applier's thread, or the caller's when the answer is known now) with the
  // parameters `worker` computes step `step` on, once its pushes of the steps before are applied
  // and the staleness rule lets it start `step` (the quorum mode: once the version of its last
  // push is past); with the error once the state is closed.
  void WhenMayStart(int worker, uint64_t step, std::function<void(absl::StatusOr<StaleRead>)> done);

  // The current parameters; and the whole state, [parameters..., optimiser state...] in the
  // job's optimiser layout (what a checkpoint or a regroup takes).
  StaleRead Read() const;
  std::vector<float> ExportState() const;
  // What a later generation resumes from (ParameterShard.ReadState): the steps it resumes at
  // (the quorum mode: the steps applied; else the most steps any worker completed here, so no
  // worker's step is applied twice) and ExportState with the optimiser's step count set to them
  // (under staleness it stepped once per push; Adam's bias correction then counts the job's
  // steps, as after a synchronous run). Read together, whatever is being applied meanwhile.
  struct Resumable {
    uint64_t step = 0;
    std::vector<float> state;
  };
  Resumable ResumeState() const;
  // Waits until at least `version` updates are applied and the pulls they released answered, the
  // state closed, or `timeout` passes (DEADLINE_EXCEEDED): what a test waits for instead of a
  // sleep, before it asserts that a pull is still waiting.
  absl::Status AwaitSettled(uint64_t version, absl::Duration timeout) const;
  // Steps `worker` has completed here (pushes applied).
  uint64_t completed(int worker) const;
  uint64_t range_elements() const { return range_elements_; }

 private:
  struct Update {
    int worker = 0;
    uint64_t step = 0;
    uint64_t read_version = 0;
    std::vector<float> gradient;
  };
  struct Waiter {
    int worker = 0;
    uint64_t step = 0;
    std::function<void(absl::StatusOr<StaleRead>)> done;
  };
  using Ready = std::vector<
      std::pair<std::function<void(absl::StatusOr<StaleRead>)>, absl::StatusOr<StaleRead>>>;

  StaleShard(StaleShardConfig config, std::vector<float> values, Optimizer optimizer,
             StaleShardMetrics metrics);
  absl::Status CheckWorker(int worker) const;
  uint64_t SlowestLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool MayAnswerLocked(const Waiter& waiter) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Ready ReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyLoop(const ApplierThread::Liveness& liveness);
  bool quorum_mode() const { return config_.backup_workers > 0; }
  // The applier's arithmetic for one update, under apply_mu_: the new parameters to publish, or
  // null while the quorum mode's step still collects.
  Values ApplyLocked(Update& update) ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  const StaleShardConfig config_;
  const uint64_t range_elements_;
  const StaleShardMetrics metrics_;
  mutable absl::Mutex mu_;
  absl::CondVar queued_;
  std::vector<uint64_t> accepted_ ABSL_GUARDED_BY(mu_);   // each worker's next step to push
  std::vector<uint64_t> completed_ ABSL_GUARDED_BY(mu_);  // each worker's steps applied
  // The quorum mode: the read version of each worker's last push (-1 before its first).
  std::vector<int64_t> last_read_ ABSL_GUARDED_BY(mu_);
  std::deque<Update> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t settled_ ABSL_GUARDED_BY(mu_) = 0;  // updates whose released pulls were answered
  Values published_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Written by the applier thread only, under apply_mu_ (held during one update's arithmetic, never
  // with mu_ waited for inside it), so ExportState reads a consistent pair; pushes and pulls take
  // only mu_ and never wait for the arithmetic.
  mutable absl::Mutex apply_mu_ ABSL_ACQUIRED_AFTER(mu_);
  Optimizer optimizer_ ABSL_GUARDED_BY(apply_mu_);
  std::vector<float> values_ ABSL_GUARDED_BY(apply_mu_);
  // Steps to resume at (ResumeState), as of the updates in values_.
  uint64_t resume_step_ ABSL_GUARDED_BY(apply_mu_) = 0;
  // The quorum mode: the step's sum so far and whose shares it holds.
  std::vector<float> sum_ ABSL_GUARDED_BY(apply_mu_);
  std::vector<std::pair<int, uint64_t>> summed_ ABSL_GUARDED_BY(apply_mu_);  // worker, step
  ApplierThread applier_;  // last: starts once everything above is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_STALE_SHARD_H_
