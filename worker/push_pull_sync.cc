#include "worker/push_pull_sync.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::worker {

PushPullSync::PushPullSync(std::vector<ElementRange> ranges,
                           std::vector<std::unique_ptr<server::StaleShardLink>> links)
    : ranges_(std::move(ranges)), links_(std::move(links)), versions_(ranges_.size(), 0) {}

absl::StatusOr<SyncTiming> PushPullSync::Step(int64_t step, absl::Span<float> gradient,
                                              absl::Span<float> params) {
  if (links_.size() != ranges_.size()) {
    return absl::InternalError("a stale sync needs one link per shard range");
  }
  const absl::Time start = absl::Now();
  // Every shard gets the push before the worker waits on any (a wait may be long by design).
  for (size_t s = 0; s < links_.size(); ++s) {
    const ElementRange& range = ranges_[s];
    RETURN_IF_ERROR(Annotate(links_[s]->Start(static_cast<uint64_t>(step), versions_[s],
                                              gradient.subspan(range.begin, range.size())),
                             absl::StrCat("pushing to ", PsShardName(static_cast<int>(s)))));
  }
  for (size_t s = 0; s < links_.size(); ++s) {
    const ElementRange& range = ranges_[s];
    absl::StatusOr<uint64_t> version = links_[s]->Finish(params.subspan(range.begin, range.size()));
    if (!version.ok()) {
      return Annotate(version.status(),
                      absl::StrCat("pulling from ", PsShardName(static_cast<int>(s))));
    }
    versions_[s] = *version;
  }
  // No optimiser runs here: the shards applied it.
  return SyncTiming{absl::Now() - start, absl::ZeroDuration()};
}

}  // namespace ringside::worker
