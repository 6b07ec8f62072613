// Bounded staleness and async (--staleness=k >= 1 or async; a push-pull policy,
// server/ps/push_pull_policy.h): the shard applies each worker's gradient share as it arrives,
// one optimiser step per push. The share (normalised by the global batch, so about 1/N of a mean
// gradient) is scaled by N, the workers of the generation, and stepped with learning rate lr/N,
// so the N updates of one round move the parameters as one synchronous step would (exactly so
// for SGD). Each worker pushes its steps in order, each once. A worker's pull of step c (the
// parameters it computes step c on) is answered once its own pushes of steps before c are
// applied and server/ps/sync_rules.h MayStartStep lets it start step c given the slowest
// worker's completed steps (async: at once).
#include <algorithm>
#include <memory>
#include <vector>

#include "common/training_options.h"
#include "server/ps/push_pull_policy.h"
#include "server/ps/push_pull_shard.h"
#include "server/ps/sync_rules.h"

namespace ringside::server {
namespace {

class BoundedStalenessPolicy final : public PushPullPolicy {
 public:
  BoundedStalenessPolicy(int workers, int64_t staleness)
      : workers_(workers), staleness_(staleness) {}

  // N updates of a share scaled by N at lr / N make one synchronous step's worth.
  OptimizerConfig ShardOptimizer(const OptimizerConfig& job) const override {
    OptimizerConfig scaled = job;
    scaled.learning_rate = job.learning_rate / static_cast<float>(workers_);
    return scaled;
  }
  bool MaySkipSteps() const override { return false; }
  void Pushed(int /*worker*/, uint64_t /*read_version*/) override {}
  bool Drops(uint64_t /*read_version*/, uint64_t /*version*/) const override { return false; }
  bool MayStart(int worker, uint64_t step, const PushPullProgress& progress) const override {
    return (*progress.completed)[worker] >= step &&
           MayStartStep(staleness_, static_cast<int64_t>(step),
                        static_cast<int64_t>(Slowest(progress)));
  }
  uint64_t Slowest(const PushPullProgress& progress) const override {
    return *std::min_element(progress.completed->begin(), progress.completed->end());
  }
  bool Take(std::vector<float>& gradient, size_t /*pushes*/) override {
    const float scale = static_cast<float>(workers_);
    for (float& g : gradient) g *= scale;
    return true;
  }
  // The most steps any worker completed here, so no worker's step is applied twice.
  uint64_t ResumeStep(uint64_t resume, uint64_t step) const override {
    return std::max(resume, step + 1);
  }

 private:
  const int workers_;
  const int64_t staleness_;
};

}  // namespace

std::unique_ptr<PushPullPolicy> MakeBoundedStaleness(const PushPullShardConfig& config,
                                                     uint64_t /*range_elements*/) {
  if (config.backup_workers > 0 || (config.staleness < 1 && config.staleness != kAsyncStaleness)) {
    return nullptr;
  }
  return std::make_unique<BoundedStalenessPolicy>(config.workers, config.staleness);
}

}  // namespace ringside::server
