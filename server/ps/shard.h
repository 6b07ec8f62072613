// One parameter-server shard in one generation, whatever its consistency, without any transport
// (ps_service.h adapts it to gRPC; ShardGeneration holds it with its links). What every mode
// shares is here or beside it: who it serves and the checks every push's header passes (check():
// PushCheck), the intake every policy keeps a push's segments with (received_share.h), its making
// from a fresh start or a Load, its end when a generation replaces it (Close), and a read of its
// parameters (GetParameters). Which pushes are summed or applied, when, and when a worker is
// answered is the consistency policy's, exactly one of:
//   synchronous steps  steps(): ShardState (shard_state.h), each step's shares summed in rank
//                      order and streamed back; every worker holds the job's state.
//   push-pull          push_pull(): PushPullShard (push_pull_shard.h) with its PushPullPolicy:
//                      bounded staleness and async (bounded_staleness.cc), the backup quorum
//                      (backup_quorum.cc); the shard holds its range's state (ReadState).
// The job's settings choose it (common/training_options.h ShardsHoldTheState). The Step stream
// serves steps(), the PushPull stream push_pull(); each is null in the other mode, and the stream
// refuses with FAILED_PRECONDITION.
//
// Thread-safe (each policy is). Lifetime: a policy's callback may drop the last reference to the
// shard; the destructor then runs on the policy's applier thread (applier_thread.h).
// Errors: Start and Resume return the policy's refusal of the configuration (INVALID_ARGUMENT).
#ifndef RINGSIDE_SERVER_PS_SHARD_H_
#define RINGSIDE_SERVER_PS_SHARD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "server/ps/push_check.h"
#include "server/ps/push_pull_shard.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

// What a generation's shard is made for.
struct ShardSpec {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
  OptimizerConfig optimizer;  // the job's
  int64_t staleness = 0;      // the job's consistency settings
  int64_t backup_workers = 0;
};

// Each policy's counters; null members are not recorded.
struct ShardMetrics {
  ShardStepMetrics steps;
  PushPullShardMetrics push_pull;
};

class Shard {
 public:
  // A fresh start: `values` the range's initial parameters, a fresh optimiser, step 0.
  static absl::StatusOr<std::shared_ptr<Shard>> Start(const ShardSpec& spec,
                                                      std::vector<float> values,
                                                      const ShardMetrics& metrics);
  // A Load: `step` steps done, `values` the range's parameters after them, `optimizer` the
  // range's optimiser (spec.optimizer's configuration) holding its state.
  static absl::StatusOr<std::shared_ptr<Shard>> Resume(const ShardSpec& spec, uint64_t step,
                                                       std::vector<float> values,
                                                       Optimizer optimizer,
                                                       const ShardMetrics& metrics);
  // Around a policy already made (tests).
  static std::shared_ptr<Shard> Synchronous(std::shared_ptr<ShardState> steps);
  static std::shared_ptr<Shard> PushPull(std::shared_ptr<PushPullShard> push_pull);

  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // The generation, workers, shard index and range length served, and what a push must meet.
  const PushCheck& check() const;
  const ShardIdentity& identity() const { return check().identity(); }
  // The policy: exactly one is non-null.
  ShardState* steps() const { return steps_.get(); }
  PushPullShard* push_pull() const { return push_pull_.get(); }

  // A new generation replaces this one: whatever waits is answered ABORTED, pushes are refused.
  void Close();

  // A read of the range's parameters after `step` steps, copied a piece at a time, in order, by
  // `copy` (elements [offset, offset + out.size())). Synchronous: the live range after the last
  // whole step (ShardState::ReadInPlace, so `copy` may fail ABORTED); push-pull: the latest
  // parameters, `step` the slowest worker's completed steps.
  struct ParametersRead {
    uint64_t step = 0;
    uint64_t size = 0;
    std::function<absl::Status(uint64_t offset, absl::Span<float> out)> copy;
  };
  // Runs `done` with the read, on this thread or, synchronous, once the step being applied ends;
  // with ABORTED when that step is lost here or the shard is closed first.
  void ReadParameters(std::function<void(absl::StatusOr<ParametersRead>)> done) const;
  // Steps done: applied (synchronous), the slowest worker's completed ones (push-pull).
  uint64_t step() const;

 private:
  Shard(std::shared_ptr<ShardState> steps, std::shared_ptr<PushPullShard> push_pull)
      : steps_(std::move(steps)), push_pull_(std::move(push_pull)) {}

  const std::shared_ptr<ShardState> steps_;
  const std::shared_ptr<PushPullShard> push_pull_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SHARD_H_
