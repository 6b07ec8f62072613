// In-process StaleShardLinks (server/ps/push_pull_client.h) over StaleShards in the same process:
// what the stale-mode worker tests use, with trainers as threads. Header-only.
#ifndef RINGSIDE_TESTS_SUPPORT_STALE_LINKS_H_
#define RINGSIDE_TESTS_SUPPORT_STALE_LINKS_H_

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "server/ps/push_pull_client.h"
#include "server/ps/push_pull_shard.h"

namespace ringside::testing {

class InProcessStaleLink final : public server::StaleShardLink {
 public:
  InProcessStaleLink(server::PushPullShard& shard, int worker, absl::Duration deadline)
      : shard_(shard), worker_(worker), deadline_(deadline) {}

  absl::Status Start(uint64_t step, uint64_t read_version,
                     absl::Span<const float> gradient) override {
    if (absl::Status pushed =
            shard_.Push(worker_, step, read_version, {gradient.begin(), gradient.end()});
        !pushed.ok()) {
      return pushed;
    }
    pull_ = std::make_shared<Pull>();
    shard_.WhenMayStart(worker_, step + 1,
                        [pull = pull_](absl::StatusOr<server::PushPullRead> read) {
                          pull->read = std::move(read);
                          pull->answered.Notify();
                        });
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Finish(absl::Span<float> params) override {
    std::shared_ptr<Pull> pull = std::move(pull_);
    if (pull == nullptr) return absl::FailedPreconditionError("Finish without Start");
    if (!pull->answered.WaitForNotificationWithTimeout(deadline_)) {
      return absl::DeadlineExceededError(absl::StrCat("worker ", worker_, "'s pull"));
    }
    if (!pull->read.ok()) return pull->read.status();
    if (pull->read->values->size() != params.size()) {
      return absl::InternalError("the shard's range does not match the worker's");
    }
    std::copy(pull->read->values->begin(), pull->read->values->end(), params.begin());
    return pull->read->version;
  }

 private:
  struct Pull {
    absl::Notification answered;
    absl::StatusOr<server::PushPullRead> read = absl::UnknownError("unanswered");
  };
  server::PushPullShard& shard_;
  const int worker_;
  const absl::Duration deadline_;
  std::shared_ptr<Pull> pull_;
};

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_STALE_LINKS_H_
