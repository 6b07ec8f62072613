// The step's sync under bounded staleness, async or backup workers (--staleness=k, async, or
// --backup_workers=b; the shards hold the authoritative parameters, server/ps/push_pull_shard.h):
// the worker pushes its gradient share to every shard, then pulls each shard's range of the
// parameters it computes its next step on, blocking while it is more than k steps ahead of the
// slowest worker (backup workers: until the step it pushed is applied, with or without it).
// Unlike SumThenUpdate, the worker runs no optimiser: its parameters are whatever it last pulled,
// and each shard's range may carry a different number of other workers' updates
// (docs/architecture.md says exactly which). With backup workers a shard's version counts steps,
// so a worker left behind skips to the step of the parameters it pulled (NextStep).
// Thread-compatible (the trainer's thread). Errors: the links'.
#ifndef RINGSIDE_WORKER_PUSH_PULL_SYNC_H_
#define RINGSIDE_WORKER_PUSH_PULL_SYNC_H_

#include <memory>
#include <optional>
#include <vector>

#include "common/ranges.h"
#include "server/ps/push_pull_client.h"
#include "worker/parameter_sync.h"

namespace ringside::worker {

// Backup workers: a shard's version v is the job's step first_step + v, and the job ends at
// end_step.
struct VersionSteps {
  int64_t first_step = 0;
  int64_t end_step = 0;
};

class PushPullSync final : public ParameterSync {
 public:
  // `links[s]` reaches the shard owning `ranges[s]` (EvenRanges of the parameters); the worker
  // starts from parameters of version 0 on every shard (the generation's loaded state).
  // `version_steps`: backup workers' shards (see above).
  PushPullSync(std::vector<ElementRange> ranges,
               std::vector<std::unique_ptr<server::StaleShardLink>> links,
               std::optional<VersionSteps> version_steps = std::nullopt);
  SyncMode mode() const override { return SyncMode::kPs; }
  absl::StatusOr<SyncTiming> Step(int64_t step, absl::Span<float> gradient,
                                  absl::Span<float> params) override;
  // Backup workers: the step of the parameters pulled last (the least of the shards' versions,
  // so no step is skipped on a shard still collecting it); else step + 1.
  int64_t NextStep(int64_t step) const override;

 private:
  // Backup workers: shard `shard` has applied the job's last step.
  bool Finished(size_t shard) const;

  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<server::StaleShardLink>> links_;
  std::vector<uint64_t> versions_;  // of each range of the worker's parameters
  std::optional<VersionSteps> version_steps_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_PUSH_PULL_SYNC_H_
