// The step's sync under bounded staleness or async (--staleness=k or async; the shards hold the
// authoritative parameters, server/ps/stale_shard.h): the worker pushes its gradient share to
// every shard, then pulls each shard's range of the parameters it computes its next step on,
// blocking while it is more than k steps ahead of the slowest worker. Unlike SumThenUpdate, the
// worker runs no optimiser: its parameters are whatever it last pulled, and each shard's range
// may carry a different number of other workers' updates (docs/architecture.md says exactly
// which). Thread-compatible (the trainer's thread). Errors: the links'.
#ifndef RINGSIDE_WORKER_PUSH_PULL_SYNC_H_
#define RINGSIDE_WORKER_PUSH_PULL_SYNC_H_

#include <memory>
#include <vector>

#include "common/ranges.h"
#include "server/ps/stale_client.h"
#include "worker/parameter_sync.h"

namespace ringside::worker {

class PushPullSync final : public ParameterSync {
 public:
  // `links[s]` reaches the shard owning `ranges[s]` (EvenRanges of the parameters); the worker
  // starts from parameters of version 0 on every shard (the generation's loaded state).
  PushPullSync(std::vector<ElementRange> ranges,
               std::vector<std::unique_ptr<server::StaleShardLink>> links);
  SyncMode mode() const override { return SyncMode::kPs; }
  absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                  absl::Span<float> params) override;

 private:
  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<server::StaleShardLink>> links_;
  std::vector<uint64_t> versions_;  // of each range of the worker's parameters
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_PUSH_PULL_SYNC_H_
