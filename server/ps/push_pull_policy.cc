#include "server/ps/push_pull_policy.h"

namespace ringside::server {

// The registered policies. Each file defines its factory, which returns null unless the
// configuration is its own; a new policy adds its declaration here and its entry to the table.
std::unique_ptr<PushPullPolicy> MakeBoundedStaleness(const PushPullShardConfig& config,
                                                     uint64_t range_elements);
std::unique_ptr<PushPullPolicy> MakeBackupQuorum(const PushPullShardConfig& config,
                                                 uint64_t range_elements);

namespace {

using PolicyFactory = std::unique_ptr<PushPullPolicy> (*)(const PushPullShardConfig& config,
                                                          uint64_t range_elements);

constexpr PolicyFactory kPolicies[] = {
    MakeBoundedStaleness,
    MakeBackupQuorum,
};

}  // namespace

std::unique_ptr<PushPullPolicy> MakePushPullPolicy(const PushPullShardConfig& config,
                                                   uint64_t range_elements) {
  for (PolicyFactory make : kPolicies) {
    if (std::unique_ptr<PushPullPolicy> policy = make(config, range_elements)) return policy;
  }
  return nullptr;
}

}  // namespace ringside::server
