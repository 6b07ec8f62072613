// The parameter server's synchronisation rules as pure functions, tested alone
// (tests/server/ps/sync_rules_test.cc): when a worker may start a step under bounded staleness
// (Ho et al., "More effective distributed ML via a stale synchronous parallel parameter server",
// NIPS 2013; ps-lite's bounded delay), and which pushes a shard with backup workers applies
// (Chen et al., "Revisiting distributed synchronous SGD", 2016). No state, no clock; thread-safe.
#ifndef RINGSIDE_SERVER_PS_SYNC_RULES_H_
#define RINGSIDE_SERVER_PS_SYNC_RULES_H_

#include <cstdint>

#include "common/training_options.h"

namespace ringside::server {

// Whether a worker may start step `step` (0-based: it has completed `step` steps) while the
// slowest worker of the generation has completed `slowest_completed` steps, under `staleness`
// (TrainingOptions::staleness). A worker more than `staleness` steps ahead of the slowest blocks:
// it may start step c once the slowest has completed step c - staleness, i.e. completed
// c - staleness steps. Staleness 0 is lock-step (everyone completed step c - 1); kAsyncStaleness
// never blocks. A `slowest_completed` beyond `step` (the caller is the slowest) always may.
constexpr bool MayStartStep(int64_t staleness, int64_t step, int64_t slowest_completed) {
  return staleness == kAsyncStaleness || step - slowest_completed <= staleness;
}

// How many workers' pushes a shard applies a step with: all but `backup_workers`, at least one.
constexpr int BackupQuorum(int workers, int64_t backup_workers) {
  return backup_workers <= 0
             ? workers
             : (backup_workers >= workers ? 1 : workers - static_cast<int>(backup_workers));
}

// What a shard with backup workers does with a worker's push of `step` while it collects step
// `collecting` (every step before it is applied or being applied).
enum class PushFate {
  kCollect,  // the step being collected: the share may still count
  kDrop,    // the step just applied without it: accepted, counted, discarded; answered with the sum
  kRefuse,  // older than that (cannot happen to a live worker: see StepMayComplete) or ahead
};
constexpr PushFate FateOfPush(uint64_t step, uint64_t collecting) {
  if (step == collecting) return PushFate::kCollect;
  if (step + 1 == collecting) return PushFate::kDrop;
  return PushFate::kRefuse;
}

// Whether a shard with backup workers applies step `collecting` now: `complete` shares of it are
// whole, `quorum` needed (BackupQuorum), and the slowest worker has begun its push of step
// `slowest_begun` (a shard restored at step S counts every worker as having begun S - 1). A step
// also waits until every worker began the step before it, so a worker is never more than one step
// behind the step being collected: its late push is always of the step just applied, whose sum the
// shard still holds to answer it (FateOfPush), and every worker applies every step's sum
// (docs/architecture.md).
constexpr bool StepMayComplete(int complete, int quorum, uint64_t collecting,
                               int64_t slowest_begun) {
  return complete >= quorum && slowest_begun + 1 >= static_cast<int64_t>(collecting);
}

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SYNC_RULES_H_
