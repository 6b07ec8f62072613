// The parameter server's synchronisation rules as pure functions, tested alone
// (tests/server/ps/sync_rules_test.cc): when a worker may start a step under bounded staleness
// (Ho et al., "More effective distributed ML via a stale synchronous parallel parameter server",
// NIPS 2013; ps-lite's bounded delay), and how many pushes a shard with backup workers applies a
// step with (Chen et al., "Revisiting distributed synchronous SGD", 2016; the rest is
// server/ps/backup_quorum.cc). No state, no clock; thread-safe.
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

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SYNC_RULES_H_
