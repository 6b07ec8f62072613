// A push-pull shard's consistency policy (server/ps/push_pull_shard.h is the shard): what the shard
// asks, and nothing else, to decide which pushes it applies, when and with what, and when a
// worker's pull may be answered. The shard does the rest alike for every policy: validation, the
// queue, the one applier thread, the optimiser, publishing, the pulls waiting, the metrics and
// the state a later generation resumes from.
//
// The policies (one file each, registered in push_pull_policy.cc's table):
//   bounded_staleness.cc  --staleness=k >= 1 or async: one optimiser step per push.
//   backup_quorum.cc      --backup_workers=b (staleness 0): a step per N - b pushes.
// A new one is a file defining its class and factory, and a line in the table (with its source
// in CMakeLists.txt); docs/architecture.md "Adding a consistency policy" says how.
//
// Threads. The shard calls each method under one of its two locks, never both for a policy's
// own state: those marked "shard's lock" under the mutex that pushes and pulls take, those
// marked "applier" on the applier thread under the lock of the arithmetic (a policy's state is
// guarded by whichever lock its methods are called under).
#ifndef RINGSIDE_SERVER_PS_PUSH_PULL_POLICY_H_
#define RINGSIDE_SERVER_PS_PUSH_PULL_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/optimizer.h"

namespace ringside::server {

struct PushPullShardConfig;

// What the shard knows when a policy decides, read under the shard's lock.
struct PushPullProgress {
  uint64_t version = 0;                              // updates applied (the parameters' version)
  const std::vector<uint64_t>* completed = nullptr;  // by worker, steps whose pushes are applied
};

class PushPullPolicy {
 public:
  virtual ~PushPullPolicy() = default;

  // The optimiser the shard steps with, from the job's (its learning rate, say). Once, at
  // creation.
  virtual OptimizerConfig ShardOptimizer(const OptimizerConfig& job) const = 0;

  // Shard's lock. Whether a worker may push a step beyond its next one (skip steps).
  virtual bool MaySkipSteps() const = 0;
  // Shard's lock. A push of `worker` computed on `read_version` was accepted (before Drops).
  virtual void Pushed(int worker, uint64_t read_version) = 0;
  // Any thread, reading no state of the policy's: whether a push computed on `read_version` is
  // dropped (counted, never applied) at `version`. Asked under the shard's lock when the push
  // arrives and again by the applier when it takes the push (the version may have moved).
  virtual bool Drops(uint64_t read_version, uint64_t version) const = 0;
  // Shard's lock. Whether `worker`'s pull of the parameters it computes step `step` on may be
  // answered now.
  virtual bool MayStart(int worker, uint64_t step, const PushPullProgress& progress) const = 0;
  // Shard's lock. The steps the slowest worker has completed, as a pull reports it.
  virtual uint64_t Slowest(const PushPullProgress& progress) const = 0;

  // Applier. Takes one push's gradient, the `pushes`-th since the last update applied: true when
  // the shard now steps its optimiser with `gradient` (replaced by what it steps with: the push,
  // or what the policy gathered, scaled), false while the policy gathers more.
  virtual bool Take(std::vector<float>& gradient, size_t pushes) = 0;
  // Applier. The steps a later generation resumes at (PushPullShard::ResumeState) after an update
  // that applied a push of `step`, from `resume` before it.
  virtual uint64_t ResumeStep(uint64_t resume, uint64_t step) const = 0;
};

// The registered policy that serves `config` over a range of `range_elements`; null when none
// does (the shard refuses the configuration).
std::unique_ptr<PushPullPolicy> MakePushPullPolicy(const PushPullShardConfig& config,
                                                   uint64_t range_elements);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_PULL_POLICY_H_
