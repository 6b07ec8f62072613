#include "worker/generation_sync.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/compression.h"
#include "common/status_macros.h"
#include "ring/compressed_sum.h"
#include "ring/powersgd_sum.h"
#include "worker/gradient_buckets.h"
#include "worker/overlapped_sync.h"
#include "worker/push_pull_sync.h"
#include "worker/regroup.h"

namespace ringside::worker {
namespace {

// The ring's policy for the job's --compression (ring/compressed_sum.h).
std::shared_ptr<ring::CompressedRingSum> MakeCompressedRingSum(const TrainingJob& job) {
  const TrainingOptions& options = job.options();
  if (options.compression.kind == CompressionKind::kPowerSgd) {
    return std::make_shared<ring::PowerSgdRingSum>(
        options.compression.rank, options.compression_warmup, options.seed, job.spec());
  }
  return std::make_shared<ring::CodecRingSum>(options.compression, options.compression_warmup,
                                              options.seed, job.spec().parameter_count());
}

}  // namespace

GenerationSync MakeRingSync(const SyncParts& parts, ring::Collective& ring, uint64_t generation) {
  ring::AllreduceOptions allreduce;
  allreduce.segment_bytes = parts.segment_bytes;
  allreduce.timeout = parts.timeout;
  allreduce.op = ring::ReduceOp::kSum;  // shares are pre-scaled by the global batch
  allreduce.wire_dtype = parts.job.options().wire_dtype;
  GenerationSync made;
  made.first_collective = CollectiveBase(generation) + kFirstStepCollective;
  const uint64_t first = made.first_collective;
  std::vector<GradientBucket> buckets =
      PlanBuckets(parts.job.spec(), parts.job.options().bucket_bytes);
  made.collectives_per_step = buckets.size() + 1;
  if (buckets.size() > 1) {
    const uint64_t stride = made.collectives_per_step;
    FaultPoints* faults = &parts.faults;
    made.sync = std::make_unique<OverlappedSync>(
        SyncMode::kRing, buckets,
        [faults, &ring, allreduce, first, stride, buckets](
            int64_t step, absl::Span<float> g, const AwaitReady& ready) -> absl::Status {
          const uint64_t base = first + stride * static_cast<uint64_t>(step);
          for (size_t b = 0; b < buckets.size(); ++b) {
            const ElementRange range = buckets[b].range;
            if (!ready(range.begin)) return absl::CancelledError("the step's compute failed");
            // The fault point between buckets: the sync thread's, read back after it is joined.
            if (b == 1 && faults->LostAt("ring_bucket")) return faults->LostStatus();
            RETURN_IF_ERROR(
                ring.Allreduce(base + b, g.subspan(range.begin, range.size()), allreduce));
          }
          return absl::OkStatus();
        },
        parts.wire_error.KeepingBuckets(nullptr), parts.optimizer);
    return made;
  }
  // --compression (random-k, PowerSGD): the ring sums each step's compressed buffers. One per
  // generation, so a regroup resets its state (ring/compressed_sum.h).
  std::shared_ptr<ring::CompressedRingSum> compressed = MakeCompressedRingSum(parts.job);
  made.collectives_per_step = compressed->allreduces_per_step() + 1;
  const uint64_t stride = made.collectives_per_step;
  made.sync = std::make_unique<SumThenUpdate>(
      SyncMode::kRing,
      parts.wire_error.Keeping(
          [&ring, allreduce, first, stride, compressed](int64_t step, absl::Span<float> g) {
            return compressed->Sum(step, g, [&](int part, absl::Span<float> buffer) {
              return ring.Allreduce(
                  first + stride * static_cast<uint64_t>(step) + static_cast<uint64_t>(part),
                  buffer, allreduce);
            });
          }),
      parts.optimizer);
  return made;
}

absl::StatusOr<GenerationSync> MakePsSync(const SyncParts& parts, server::ShardGroup& shards,
                                          uint64_t generation, int64_t completed) {
  const TrainingOptions& job = parts.job.options();
  GenerationSync made;
  made.first_collective = CollectiveBase(generation) + kFirstStepCollective;
  made.collectives_per_step = 2;  // the step's sum goes to the shards; the ring samples only
  if (ShardsHoldTheState(job.staleness, job.backup_workers)) {
    std::optional<VersionSteps> version_steps;
    if (job.backup_workers > 0) version_steps = VersionSteps{completed, job.steps};
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<server::StaleShardLink>> links,
                     shards.PushPullLinks());
    made.sync = std::make_unique<PushPullSync>(shards.ranges(), std::move(links), version_steps);
    return made;
  }
  server::ShardGroup* group = &shards;
  std::vector<GradientBucket> buckets = PlanBuckets(parts.job.spec(), job.bucket_bytes);
  if (buckets.size() > 1) {
    // Each bucket is kept (sampled steps) and divided for the wire as it is complete.
    made.sync = std::make_unique<OverlappedSync>(
        SyncMode::kPs, std::move(buckets),
        [group](int64_t step, absl::Span<float> g, const AwaitReady& ready) {
          return group->SumAsReady(step, g, ready);
        },
        parts.wire_error.KeepingBuckets(
            [group](absl::Span<float> part) { group->PrepareShare(part); }),
        parts.optimizer);
    return made;
  }
  made.sync = std::make_unique<SumThenUpdate>(
      SyncMode::kPs, parts.wire_error.Keeping([group](int64_t step, absl::Span<float> g) {
        return group->Sum(step, g);
      }),
      parts.optimizer);
  return made;
}

}  // namespace ringside::worker
