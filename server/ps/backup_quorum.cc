// Backup workers (--backup_workers=b with staleness 0; Chen et al., "Revisiting distributed
// synchronous SGD", 2016, as TensorFlow's SyncReplicasOptimizer; a push-pull policy,
// server/ps/push_pull_policy.h): the quorum. The shard sums the pushes computed on its current
// version until N - b of them are in (in arrival order; sync_rules.h BackupQuorum), then applies
// their mean in one optimiser step at the job's learning rate: a step, and the version counts
// steps. A push computed on an older version is dropped and counted
// (ringside_ps_dropped_pushes_total), never applied, so the staleness it is applied at is always
// 0. A worker's pull is answered once the version it pushed on is past, with the latest
// parameters, so a slow worker never holds the others back: it computes on the newest parameters
// and its step jumps to their version, skipping the steps it missed (worker/push_pull_sync.h).
#include <algorithm>
#include <memory>
#include <vector>

#include "server/ps/push_pull_policy.h"
#include "server/ps/push_pull_shard.h"
#include "server/ps/sync_rules.h"

namespace ringside::server {
namespace {

class BackupQuorumPolicy final : public PushPullPolicy {
 public:
  BackupQuorumPolicy(const PushPullShardConfig& config, uint64_t range_elements)
      : workers_(config.workers),
        quorum_(BackupQuorum(config.workers, config.backup_workers)),
        completed_steps_(config.completed_steps),
        last_read_(static_cast<size_t>(config.workers), -1),
        sum_(range_elements, 0.0f) {}

  // One step per quorum, at the job's rate.
  OptimizerConfig ShardOptimizer(const OptimizerConfig& job) const override { return job; }
  // A worker left behind skips to the latest step.
  bool MaySkipSteps() const override { return true; }
  void Pushed(int worker, uint64_t read_version) override {
    last_read_[worker] = static_cast<int64_t>(read_version);
  }
  // Its step was applied without it.
  bool Drops(uint64_t read_version, uint64_t version) const override {
    return read_version < version;
  }
  bool MayStart(int worker, uint64_t /*step*/, const PushPullProgress& progress) const override {
    return static_cast<int64_t>(progress.version) > last_read_[worker];
  }
  // The steps applied.
  uint64_t Slowest(const PushPullProgress& progress) const override {
    return completed_steps_ + progress.version;
  }
  bool Take(std::vector<float>& gradient, size_t pushes) override {
    for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += gradient[i];
    if (pushes < static_cast<size_t>(quorum_)) return false;
    // Each share is normalised by the global batch: N / q turns q of them into their mean.
    float scale = static_cast<float>(workers_);
    scale /= static_cast<float>(quorum_);
    gradient.swap(sum_);
    std::fill(sum_.begin(), sum_.end(), 0.0f);  // the pushed buffer holds the next step's sum
    for (float& g : gradient) g *= scale;
    return true;
  }
  uint64_t ResumeStep(uint64_t resume, uint64_t /*step*/) const override { return resume + 1; }

 private:
  const int workers_;
  const int quorum_;
  const uint64_t completed_steps_;
  // Shard's lock: the read version of each worker's last push (-1 before its first).
  std::vector<int64_t> last_read_;
  // Applier: the step's sum so far.
  std::vector<float> sum_;
};

}  // namespace

std::unique_ptr<PushPullPolicy> MakeBackupQuorum(const PushPullShardConfig& config,
                                                 uint64_t range_elements) {
  if (config.backup_workers <= 0 || config.staleness != 0) return nullptr;
  return std::make_unique<BackupQuorumPolicy>(config, range_elements);
}

}  // namespace ringside::server
