// The step's sync of one generation, built in one place from the job and the generation's mode:
// the ring's allreduce or the shards' sums (ShardGroup), then the optimiser on this worker
// (SumThenUpdate), bucket by bucket while the backward pass runs when --bucket_bytes cuts the
// gradient into more than one bucket (OverlappedSync); or, when the shards hold the state
// (--staleness, async, --backup_workers), pushes and pulls (PushPullSync).
//
// Ring collective numbers of a generation's steps: step t's B buckets are first + (B + 1)t + b and
// its sampled wire error's exact sum the next, first + (B + 1)t + B (worker/wire_error_sampler.h);
// every worker plans alike (the same job), so every worker numbers alike; unbucketed (B = 1)
// that is first + 2t, and with PowerSGD (two allreduces a step, ring/powersgd_sum.h) first + 3t
// and first + 3t + 1, the wire error's first + 3t + 2. first is the generation's
// kFirstStepCollective (worker/regroup.h). Thread-compatible.
#ifndef RINGSIDE_WORKER_GENERATION_SYNC_H_
#define RINGSIDE_WORKER_GENERATION_SYNC_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/optimizer.h"
#include "common/wire_dtype.h"
#include "ring/collective.h"
#include "server/ps/shard_group.h"
#include "worker/data_parallel.h"
#include "worker/fault_injection.h"
#include "worker/parameter_sync.h"
#include "worker/wire_error_sampler.h"

namespace ringside::worker {

struct GenerationSync {
  std::unique_ptr<ParameterSync> sync;
  uint64_t first_collective = 0;      // of the generation's steps
  uint64_t collectives_per_step = 2;  // B + 1
  // The ring collective of step `step`'s sampled wire error.
  uint64_t WireErrorCollective(int64_t step) const {
    return first_collective + collectives_per_step * static_cast<uint64_t>(step) +
           (collectives_per_step - 1);
  }
};

// What every generation's sync is built from. Everything referred to must outlive the syncs.
struct SyncParts {
  const TrainingJob& job;
  Optimizer& optimizer;          // the member's: SumThenUpdate applies it to the sum
  WireErrorSampler& wire_error;  // keeps this worker's share on sampled steps
  FaultPoints& faults;           // ring_bucket
  uint64_t segment_bytes = uint64_t{1} << 20;
  absl::Duration timeout = absl::Seconds(60);
};

// Ring mode: the ring's allreduce of `generation`.
GenerationSync MakeRingSync(const SyncParts& parts, ring::Collective& ring, uint64_t generation);
// PS mode over `shards` (connected for the generation). `completed`: the steps completed when
// the generation begins (backup workers' shard versions count from it). The PushPullLinks'
// error when the shards cannot be reached.
absl::StatusOr<GenerationSync> MakePsSync(const SyncParts& parts, server::ShardGroup& shards,
                                          uint64_t generation, int64_t completed);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_GENERATION_SYNC_H_
