// One parameter-server shard whose range the shard itself holds authoritatively, the push-pull
// shard (--staleness=k >= 1, async or --backup_workers; docs/architecture.md "Bounded staleness
// and async"), without any transport. Unlike ShardState (synchronous steps, where every worker
// holds the job's state), the shard holds the parameters of its range and its optimiser state.
// Workers push gradients and pull parameters: a push is a worker's gradient share of one step
// computed on the parameters of a read version; a pull is answered with the parameters a worker
// computes its next step on. Which pushes are applied, when and with what, and when a pull may be
// answered, is the consistency policy's (server/ps/push_pull_policy.h): bounded staleness and
// async (bounded_staleness.cc: one optimiser step per push), or the backup workers' quorum
// (backup_quorum.cc: a step per quorum of pushes, late ones dropped). The shard does the rest.
//
// Version: updates applied to this range since the state was created (the generation's start;
// in the quorum, steps). A push carries the version of the parameters its gradient was computed
// on; the difference to the version it is applied at is its staleness (the histogram
// ringside_ps_update_staleness; always 0 in the quorum, which drops what is stale).
//
// Threads. The push calls and WhenMayStart run on the caller's thread (gRPC's callback
// threads) and only validate and keep; one applier thread (server/ps/applier_thread.h) decodes
// each whole push and runs the optimiser without the lock, publishes each update in a short
// critical section, then runs the callbacks whose condition now holds, outside the lock.
// Thread-safe.
// Errors: FAILED_PRECONDITION for another generation, a closed state, a push ahead of the worker's
// next step or a segment outside a push; ALREADY_EXISTS for a step the worker already pushed or
// is pushing; INVALID_ARGUMENT for an unknown rank, a share of another range's size, a segment
// that does not continue the share or holds a NaN or infinity (never applied: NonFiniteReport),
// an incomplete share, or a read version the shard has not reached.
// Lifetime: a callback run on the applier thread may drop the last reference to the shard; the
// destructor then lets the applier end by itself instead of joining it
// (server/ps/applier_thread.h).
#ifndef RINGSIDE_SERVER_PS_PUSH_PULL_SHARD_H_
#define RINGSIDE_SERVER_PS_PUSH_PULL_SHARD_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "common/training_options.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "server/ps/applier_thread.h"
#include "server/ps/push_check.h"
#include "server/ps/push_pull_policy.h"
#include "server/ps/received_share.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

struct PushPullShardConfig {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
  int64_t staleness = 1;  // >= 1 or kAsyncStaleness (common/training_options.h)
  // Steps every worker of the generation has completed when it begins (the regroup's).
  uint64_t completed_steps = 0;
  // > 0 (with staleness 0): the quorum (backup_quorum.cc), a step applied with workers - b pushes.
  int64_t backup_workers = 0;
};

// Null members are not recorded.
struct PushPullShardMetrics {
  prometheus::Histogram* staleness = nullptr;  // ringside_ps_update_staleness
  prometheus::Counter* updates = nullptr;
  prometheus::Counter* dropped = nullptr;  // pushes the policy drops (the quorum's stale ones)
  NonFiniteReport nonfinite;               // pushes refused for a NaN or infinity
};

// The parameters a worker computes its next step on.
struct PushPullRead {
  uint64_t version = 0;
  // Steps the slowest worker had completed (PushPullPolicy::Slowest; the quorum: steps applied).
  uint64_t slowest_completed = 0;
  Values values;
};

class PushPullShard {
 public:
  // `values` is the range's parameters; `optimizer_state` its optimiser state in the job's
  // configuration (Optimizer::ExportState layout; empty: a fresh optimiser). `optimizer` is the
  // job's: the shard steps with what the policy makes of it (bounded staleness: lr / workers).
  // INVALID_ARGUMENT when no policy serves `config`.
  static absl::StatusOr<std::unique_ptr<PushPullShard>> Create(
      PushPullShardConfig config, std::vector<float> values,
      absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
      PushPullShardMetrics metrics = {});
  ~PushPullShard();
  PushPullShard(const PushPullShard&) = delete;
  PushPullShard& operator=(const PushPullShard&) = delete;

  // A new generation replaces this one: every waiting pull is answered ABORTED, pushes are
  // refused; an update being applied is finished.
  void Close();

  // Worker `worker`'s gradient share of step `step`, computed on the parameters of
  // `read_version`, pushed segment by segment through the intake every shard shares
  // (received_share.h), as ShardState's steps are: BeginPush checks the header (generation,
  // worker, a share of the whole range) and the step (each worker pushes its steps in order,
  // each once; the policy may let it skip steps: the quorum's); AddSegment checks each float32
  // segment (in order, finite) and keeps it as received; FinishPush, once every element has
  // arrived, hands the share to the applier, which decodes it there. A push the policy drops is
  // accepted and never applied. AbandonPush forgets a push that will not be finished (its stream
  // broke): it may be made again. A refused call changes nothing.
  absl::Status BeginPush(uint64_t generation, int worker, uint64_t step, uint64_t read_version,
                         uint64_t range_elements);
  // `pieces`: the payload's bytes in order (the received slices), kept valid by `owner` for as
  // long as the shard holds them.
  absl::Status AddSegment(int worker, uint64_t step, uint64_t offset,
                          std::vector<absl::string_view> pieces, std::shared_ptr<const void> owner);
  absl::Status FinishPush(int worker, uint64_t step);
  void AbandonPush(int worker, uint64_t step);
  // The three at once with a copy of `gradient`, abandoned when refused (tests).
  absl::Status Push(int worker, uint64_t step, uint64_t read_version, std::vector<float> gradient);

  // Runs `done` (on the applier's thread, or the caller's when the answer is known now) with the
  // parameters `worker` computes step `step` on, once its pushes of the steps before are applied
  // and the policy lets it start `step` (bounded staleness: its pushes of the steps before are
  // applied and the staleness rule allows it; the quorum: the version of its last push is past);
  // with the error once the state is closed.
  void WhenMayStart(int worker, uint64_t step,
                    std::function<void(absl::StatusOr<PushPullRead>)> done);

  // The current parameters; and the whole state, [parameters..., optimiser state...] in the
  // job's optimiser layout (what a checkpoint or a regroup takes).
  PushPullRead Read() const;
  std::vector<float> ExportState() const;
  // What a later generation resumes from (ParameterShard.ReadState): the steps it resumes at
  // (PushPullPolicy::ResumeStep: the quorum's steps applied; under staleness the most steps any
  // worker completed here, so no worker's step is applied twice) and ExportState with the
  // optimiser's step count set to them (under staleness it stepped once per push; Adam's bias
  // correction then counts the job's steps, as after a synchronous run). Read together, whatever is
  // being applied meanwhile.
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
  // The checks every push passes, the generation's included (its stream checks that one).
  const PushCheck& check() const { return check_; }

 private:
  // A worker's push being received.
  struct OpenPush {
    uint64_t step = 0;
    uint64_t read_version = 0;
    ReceivedShare share;
  };
  // A whole push, queued for the applier: its share as received, in range order.
  struct Update {
    int worker = 0;
    uint64_t step = 0;
    uint64_t read_version = 0;
    HeldPayloads share;
  };
  struct Waiter {
    int worker = 0;
    uint64_t step = 0;
    std::function<void(absl::StatusOr<PushPullRead>)> done;
  };
  using Ready = std::vector<
      std::pair<std::function<void(absl::StatusOr<PushPullRead>)>, absl::StatusOr<PushPullRead>>>;

  PushPullShard(PushPullShardConfig config, std::unique_ptr<PushPullPolicy> policy,
                std::vector<float> values, Optimizer optimizer, PushPullShardMetrics metrics);
  uint64_t SlowestLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool MayAnswerLocked(const Waiter& waiter) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Ready ReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PushPullProgress ProgressLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyLoop(const ApplierThread::Liveness& liveness);
  // The applier's arithmetic for one update, under apply_mu_: the new parameters to publish, or
  // null while the policy gathers more pushes.
  Values ApplyLocked(const Update& update) ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // `worker`'s open push of `step`, or why there is none.
  absl::StatusOr<OpenPush*> OpenPushLocked(int worker, uint64_t step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PushPullShardConfig config_;
  const uint64_t range_elements_;
  const PushPullShardMetrics metrics_;
  const PushCheck check_;  // the worker, range and finiteness of every push
  // Its methods under mu_ or apply_mu_, as push_pull_policy.h marks them.
  const std::unique_ptr<PushPullPolicy> policy_;
  mutable absl::Mutex mu_;
  absl::CondVar queued_;
  std::vector<uint64_t> accepted_ ABSL_GUARDED_BY(mu_);   // each worker's next step to push
  std::vector<uint64_t> completed_ ABSL_GUARDED_BY(mu_);  // each worker's steps applied
  std::vector<OpenPush> open_ ABSL_GUARDED_BY(mu_);       // by worker
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
  // The pushes the policy has taken since the last update applied: worker, step.
  std::vector<std::pair<int, uint64_t>> summed_ ABSL_GUARDED_BY(apply_mu_);
  // The update's gradient, decoded from its share (then what the policy makes of it).
  std::vector<float> gradient_ ABSL_GUARDED_BY(apply_mu_);
  ApplierThread applier_;  // last: starts once everything above is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_PULL_SHARD_H_
