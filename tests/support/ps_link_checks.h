// What the parameter server's gRPC tests check after their workers' steps: the bytes on each
// worker's links to a shard, and that every shard holds the workers' parameters.
#ifndef RINGSIDE_TESTS_SUPPORT_PS_LINK_CHECKS_H_
#define RINGSIDE_TESTS_SUPPORT_PS_LINK_CHECKS_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/metrics.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"

namespace ringside::testing {

// `worker`'s link to `shard` and back, as `metrics` counted them: `bytes` pushed, `bytes`
// expected by the cost model, `bytes` of reply received.
inline void ExpectPsLinkBytes(Metrics& metrics, int worker, int shard, double bytes) {
  const LinkSendMetrics up =
      metrics.LinkSend(WorkerName(worker), PsShardName(shard), SyncMode::kPs);
  const LinkReceiveMetrics down =
      metrics.LinkReceive(PsShardName(shard), WorkerName(worker), SyncMode::kPs);
  EXPECT_EQ(up.bytes->Value(), bytes) << WorkerName(worker) << " -> " << PsShardName(shard);
  EXPECT_EQ(up.expected_bytes->Value(), bytes)
      << WorkerName(worker) << " -> " << PsShardName(shard);
  EXPECT_EQ(down.bytes->Value(), bytes) << PsShardName(shard) << " -> " << WorkerName(worker);
}

// Every shard of `services` (shard s serving `ranges[s]`) has applied `steps` steps and holds
// exactly `params`' range: it updated its copy with the values the workers decoded.
inline void ExpectShardsHold(
    const std::vector<std::unique_ptr<server::ParameterShardService>>& services,
    const std::vector<ElementRange>& ranges, uint64_t steps, const std::vector<float>& params) {
  for (size_t s = 0; s < services.size(); ++s) {
    const server::ShardState::Applied applied =
        services[s]->current()->shard->steps()->applied().value();
    EXPECT_EQ(applied.step, steps);
    EXPECT_EQ(std::memcmp(applied.values->data(), params.data() + ranges[s].begin,
                          ranges[s].size() * sizeof(float)),
              0)
        << PsShardName(static_cast<int>(s));
  }
}

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_PS_LINK_CHECKS_H_
