// One parameter-server shard's state machine, without any transport (ps_service.h adapts it to
// gRPC). The shard owns a contiguous range of the flat parameter vector and the optimiser state
// for it. Step t is applied whole or not at all: once every worker of the generation has pushed
// a complete gradient share for step t, the shares are summed in rank order (deterministic,
// whatever order they arrived in) and the shared optimiser (common/optimizer.h) updates the
// range. Workers pre-scale their shares by the global batch size, so the sum is the mean
// gradient of the global batch.
//
// Across shards a step is atomic from the job's point of view: a worker completes step t only
// once every shard applied it, so shards differ by at most one step, and each shard keeps the
// state before its last applied step. A regroup fetches the state at the lowest step any shard
// holds, rolling the others back (ps/shard_transfer.h).
//
// Thread-safe. Callbacks registered with WhenApplied run outside the lock, on the thread that
// completed the step (or the caller's, when the step is already applied).
// Errors: FAILED_PRECONDITION for a stale generation or a step that is not the current one;
// INVALID_ARGUMENT for an unknown rank, a range length that does not match, a segment out of
// sequence, ragged or too long, or an incomplete share; ALREADY_EXISTS for a second push of the
// same step by the same worker. A refused push changes nothing.
#ifndef RINGSIDE_PS_SHARD_STATE_H_
#define RINGSIDE_PS_SHARD_STATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

using Parameters = std::shared_ptr<const std::vector<float>>;

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

  // A consistent copy of everything Restore() takes.
  struct Snapshot {
    uint64_t step = 0;
    std::vector<float> values;
    std::vector<float> optimizer_state;
  };
  // The current state, or the one after exactly `step` steps if that is the current or the
  // previous one (else FAILED_PRECONDITION naming the steps held).
  absl::StatusOr<Snapshot> Export(std::optional<uint64_t> step = std::nullopt) const;

  // The shard moves to another generation: every worker still waiting for a step is answered
  // with nullptr parameters (its stream ends ABORTED), and nothing more is applied.
  void Close();

  absl::Status BeginPush(uint64_t generation, int worker, uint64_t step, uint64_t range_elements);
  absl::Status AddSegment(int worker, uint64_t step, uint64_t offset, absl::string_view payload);
  // The share is complete; the last worker's completion applies the step.
  absl::Status FinishPush(int worker, uint64_t step);
  // Forgets a push that will not be completed (its stream broke). No-op if none is open.
  void AbandonPush(int worker, uint64_t step);

  // Runs `done` with the parameters after step `step` once it has been applied (nullptr once
  // the state is closed).
  void WhenApplied(uint64_t step, std::function<void(Parameters)> done);

  uint64_t current_step() const;  // steps applied so far = the step being collected
  Parameters parameters() const;  // after the last applied step
  uint64_t range_elements() const { return range_elements_; }
  const ShardConfig& config() const { return config_; }

 private:
  enum class PushState { kIdle, kPushing, kDone };
  struct WorkerShare {
    PushState state = PushState::kIdle;
    uint64_t received = 0;
    std::vector<float> values;
  };

  ShardState(ShardConfig config, std::vector<float> initial, Optimizer optimizer,
             ShardStepMetrics metrics);
  absl::Status CheckWorker(int worker) const;
  absl::Status CheckStep(uint64_t step) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the step when every share is done; returns the callbacks to run.
  std::vector<std::function<void(Parameters)>> MaybeApply() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ShardConfig config_;
  const uint64_t range_elements_;
  const ShardStepMetrics metrics_;
  mutable absl::Mutex mu_;
  Optimizer optimizer_ ABSL_GUARDED_BY(mu_);
  std::vector<float> values_ ABSL_GUARDED_BY(mu_);
  Parameters snapshot_ ABSL_GUARDED_BY(mu_);
  std::optional<Snapshot> previous_ ABSL_GUARDED_BY(mu_);  // before the last applied step
  uint64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<WorkerShare> shares_ ABSL_GUARDED_BY(mu_);
  absl::Time first_push_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<std::pair<uint64_t, std::function<void(Parameters)>>> waiters_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ringside::server

#endif  // RINGSIDE_PS_SHARD_STATE_H_
