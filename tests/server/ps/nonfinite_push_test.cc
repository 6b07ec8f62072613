// Both shards refuse a push that carries a NaN or an infinity (issue 51): the synchronous shard
// (ShardState, whatever the wire dtype, a non-finite element split across received slices
// included) and the push-pull shard (PushPullShard). The refusal is INVALID_ARGUMENT, counted, and
// logged naming the worker and the step; nothing of the push is kept or applied, and the worker
// may push the step again with finite values.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "server/ps/push_pull_shard.h"
#include "server/ps/shard_state.h"

namespace ringside::server {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr absl::Duration kDeadline = absl::Seconds(30);  // a hang fails, no result depends on it

std::string Encoded(WireDtype dtype, const std::vector<float>& values) {
  std::string wire(values.size() * WireBytesPerElement(dtype), '\0');
  EncodeWire(dtype, values, wire.data());
  return wire;
}

// The report's counter and log lines, as a shard daemon wires them.
class Reported {
 public:
  NonFiniteReport Report() {
    NonFiniteReport report;
    report.refused = &refused_;
    report.log = [this](const std::string& line) {
      absl::MutexLock lock(&mu_);
      lines_.push_back(line);
    };
    return report;
  }
  double refused() const { return refused_.Value(); }
  std::vector<std::string> lines() const {
    absl::MutexLock lock(&mu_);
    return lines_;
  }

 private:
  prometheus::Counter refused_;
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<ShardState> SyncShard(NonFiniteReport report) {
  ShardStepMetrics metrics;
  metrics.nonfinite = std::move(report);
  auto state =
      ShardState::Create(ShardConfig{/*generation=*/4, /*workers=*/2, /*shard=*/1}, {10, 20, 30},
                         OptimizerConfig{OptimizerKind::kSgd, 1.0f}, metrics);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? std::move(*state) : nullptr;
}

std::vector<float> WaitApplied(ShardState& state, uint64_t step) {
  absl::Notification applied;
  std::vector<float> sum;
  state.WhenApplied(step, [&](Values values) {
    if (values != nullptr) sum = *values;
    applied.Notify();
  });
  EXPECT_TRUE(applied.WaitForNotificationWithTimeout(kDeadline));
  return sum;
}

class SyncShardNonFiniteTest : public ::testing::TestWithParam<WireDtype> {};

TEST_P(SyncShardNonFiniteTest, APushWithANaNOrInfinityIsRefusedCountedLoggedAndNeverSummed) {
  const WireDtype dtype = GetParam();
  Reported reported;
  std::unique_ptr<ShardState> state = SyncShard(reported.Report());
  ASSERT_NE(state, nullptr);
  for (const float bad : {kNaN, kInf, -kInf}) {
    ASSERT_TRUE(state->BeginPush(4, 1, 0, 3, dtype).ok());
    const absl::Status refused = state->AddSegment(1, 0, 0, Encoded(dtype, {1, bad, 2}));
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
    EXPECT_NE(refused.message().find("worker-1"), absl::string_view::npos) << refused;
    // Nothing of it was kept: the share is still empty, so a later segment must start at 0.
    EXPECT_EQ(state->AddSegment(1, 0, 1, Encoded(dtype, {1})).code(),
              absl::StatusCode::kInvalidArgument);
    state->AbandonPush(1, 0);  // what the refused stream's end does
  }
  EXPECT_EQ(reported.refused(), 3);
  const std::vector<std::string> lines = reported.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("ps-1: refused worker-1's push of step 0 (generation 4)"),
            std::string::npos)
      << lines[0];
  // The same worker pushes the step again with finite values: the step goes on as ever.
  for (int worker : {0, 1}) {
    ASSERT_TRUE(state->BeginPush(4, worker, 0, 3, dtype).ok());
    ASSERT_TRUE(state->AddSegment(worker, 0, 0, Encoded(dtype, {1, 1, 1})).ok());
    ASSERT_TRUE(state->FinishPush(worker, 0).ok());
  }
  const std::vector<float> sum = WaitApplied(*state, 0);
  ASSERT_EQ(sum.size(), 3u);
  for (float value : sum) EXPECT_TRUE(std::isfinite(value)) << value;
  EXPECT_EQ(reported.refused(), 3) << "finite pushes are not counted";
}

INSTANTIATE_TEST_SUITE_P(EveryWireDtype, SyncShardNonFiniteTest,
                         ::testing::Values(WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16),
                         [](const auto& info) { return std::string(WireDtypeName(info.param)); });

TEST(SyncShardNonFiniteSlicesTest, AnInfinityStraddlingTwoReceivedSlicesIsFound) {
  Reported reported;
  std::unique_ptr<ShardState> state = SyncShard(reported.Report());
  ASSERT_NE(state, nullptr);
  ASSERT_TRUE(state->BeginPush(4, 0, 0, 3, WireDtype::kFp16).ok());
  // fp16's infinity: an encoding of a finite value beyond its range, its two bytes in two slices.
  auto payload = std::make_shared<const std::string>(Encoded(WireDtype::kFp16, {1, 1e6f, 2}));
  const absl::string_view bytes = *payload;
  EXPECT_EQ(state->AddSegment(0, 0, 0, {bytes.substr(0, 3), bytes.substr(3)}, payload).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reported.refused(), 1);
  EXPECT_EQ(*state->parameters().value(), (std::vector<float>{10, 20, 30}));
}

TEST(StaleShardNonFiniteTest, APushWithANaNIsRefusedAndTheStepMayBePushedAgain) {
  Reported reported;
  PushPullShardMetrics metrics;
  metrics.nonfinite = reported.Report();
  auto created = PushPullShard::Create(
      PushPullShardConfig{/*generation=*/2, /*workers=*/2, /*shard=*/0,
                          /*staleness=*/1},
      std::vector<float>{1.0f, 2.0f}, {}, OptimizerConfig{OptimizerKind::kSgd, 1.0f}, metrics);
  ASSERT_TRUE(created.ok()) << created.status();
  PushPullShard& shard = **created;
  const absl::Status refused = shard.Push(1, 0, 0, {kNaN, 1.0f});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_EQ(shard.Push(1, 0, 0, {1.0f, kInf}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reported.refused(), 2);
  const std::vector<std::string> lines = reported.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("ps-0: refused worker-1's push of step 0 (generation 2)"),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(shard.Read().version, 0u) << "nothing applied";
  EXPECT_EQ(shard.completed(1), 0u);
  // The refusal did not count as the step's push: the worker pushes it again, finite.
  ASSERT_TRUE(shard.Push(1, 0, 0, {0.5f, 0.5f}).ok());
  ASSERT_TRUE(shard.AwaitSettled(1, kDeadline).ok());
  const PushPullRead read = shard.Read();
  ASSERT_NE(read.values, nullptr);
  for (float value : *read.values) EXPECT_TRUE(std::isfinite(value)) << value;
  EXPECT_EQ(shard.completed(1), 1u);
}

}  // namespace
}  // namespace ringside::server
