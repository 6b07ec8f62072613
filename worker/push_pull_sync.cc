#include "worker/push_pull_sync.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::worker {

PushPullSync::PushPullSync(std::vector<ElementRange> ranges,
                           std::vector<std::unique_ptr<server::StaleShardLink>> links,
                           std::optional<VersionSteps> version_steps)
    : ranges_(std::move(ranges)),
      links_(std::move(links)),
      versions_(ranges_.size(), 0),
      version_steps_(version_steps) {}

int64_t PushPullSync::NextStep(int64_t step) const {
  if (!version_steps_.has_value() || versions_.empty()) return step + 1;
  // Each shard answers once the version pushed on is past, so the least version is past the
  // step just trained: the worker never trains a step twice.
  return version_steps_->first_step +
         static_cast<int64_t>(*std::min_element(versions_.begin(), versions_.end()));
}

bool PushPullSync::Finished(size_t shard) const {
  return version_steps_.has_value() &&
         version_steps_->first_step + static_cast<int64_t>(versions_[shard]) >=
             version_steps_->end_step;
}

absl::StatusOr<SyncTiming> PushPullSync::Step(int64_t step, absl::Span<float> gradient,
                                              absl::Span<float> params) {
  if (links_.size() != ranges_.size()) {
    return absl::InternalError("a stale sync needs one link per shard range");
  }
  const absl::Time start = absl::Now();
  // Every shard gets the push before the worker waits on any (a wait may be long by design).
  // A shard that applied the job's last step (backup workers: another may still be on it) gets
  // none: nobody would make a step of it, and its range is final (nor a pull, below: a shard's
  // version changes only with its own pull).
  for (size_t s = 0; s < links_.size(); ++s) {
    if (Finished(s)) continue;
    const ElementRange& range = ranges_[s];
    RETURN_IF_ERROR(Annotate(links_[s]->Start(static_cast<uint64_t>(step), versions_[s],
                                              gradient.subspan(range.begin, range.size())),
                             absl::StrCat("pushing to ", PsShardName(static_cast<int>(s)))));
  }
  for (size_t s = 0; s < links_.size(); ++s) {
    if (Finished(s)) continue;
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
