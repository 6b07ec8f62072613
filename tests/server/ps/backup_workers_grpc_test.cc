// Backup workers over the real ParameterShard service and PsClient, in one process (shards on
// loopback, workers as threads or in turn): a step is answered to the quorum without the slow
// worker, the slow worker's late push is dropped (counted) yet answered with the same sum,
// streamed in segments no further than it has pushed; the next step is not applied until the
// slow worker began the previous one. Order comes from the calls themselves, never from time.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_util.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_service.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 300;
constexpr int kShards = 2;
constexpr int kWorkers = 3;
constexpr uint64_t kSegmentBytes = 64;  // 16 elements: many segments per range

class BackupWorkersGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
    for (int s = 0; s < kShards; ++s) {
      ShardStepMetrics metrics;
      metrics.dropped_pushes = &dropped_[s];
      auto state = ShardState::Create(ShardConfig{1, kWorkers, s, /*backup_workers=*/1},
                                      std::vector<float>(ranges[s].size(), 0.0f),
                                      OptimizerConfig{OptimizerKind::kSgd, 1.0f}, metrics);
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<ParameterShardService>(kSegmentBytes));
      ShardGeneration generation;
      generation.state = *std::move(state);
      services_.back()->Serve(std::move(generation));
      auto started = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(started.ok()) << started.status();
      addresses_.push_back("127.0.0.1:" + std::to_string(started->port));
      servers_.push_back(*std::move(started));
    }
    for (int w = 0; w < kWorkers; ++w) {
      PsClientOptions options;
      options.rank = w;
      options.shards = addresses_;
      options.segment_bytes = kSegmentBytes;
      // A window far below a range (150 elements): a client that waited for replies before
      // pushing its whole share would wait for ever, since the shard answers only a quorum of
      // whole shares (it once did, and the heavy job hung at step 0).
      options.window_bytes = kSegmentBytes;
      options.backup_workers = 1;
      options.timeout = absl::Seconds(60);  // far beyond any test: reaching it is a failure
      clients_.push_back(*PsClient::Create(options, kParameters, nullptr));
    }
  }

  // Worker w's share of a step: w + 1 in every element, so a sum names who is in it.
  static std::vector<float> Share(int worker) {
    return std::vector<float>(kParameters, static_cast<float>(worker + 1));
  }

  // Workers 0 and 1 push `step` at once and get its sum.
  void FastWorkersStep(int64_t step, std::vector<float>& sum0, std::vector<float>& sum1) {
    sum0 = Share(0);
    sum1 = Share(1);
    absl::Status status1;
    std::thread other([&] { status1 = clients_[1]->Sum(step, absl::MakeSpan(sum1)); });
    const absl::Status status0 = clients_[0]->Sum(step, absl::MakeSpan(sum0));
    other.join();
    ASSERT_TRUE(status0.ok()) << status0;
    ASSERT_TRUE(status1.ok()) << status1;
  }

  prometheus::Counter dropped_[kShards];
  std::vector<std::unique_ptr<ParameterShardService>> services_;  // outlive the servers
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<PsClient>> clients_;
};

TEST_F(BackupWorkersGrpcTest, TheSlowWorkersLatePushIsDroppedAndAnsweredWithTheQuorumsSum) {
  std::vector<float> sum0, sum1;
  // Step 0: workers 0 and 1 are the quorum (2 of 3); worker 2 has not pushed at all.
  FastWorkersStep(0, sum0, sum1);
  EXPECT_EQ(sum0, std::vector<float>(kParameters, 3.0f));
  EXPECT_EQ(sum1, sum0);
  // Worker 2 pushes step 0 late: dropped on every shard, answered with the same sum.
  std::vector<float> sum2 = Share(2);
  ASSERT_TRUE(clients_[2]->Sum(0, absl::MakeSpan(sum2)).ok());
  EXPECT_EQ(sum2, sum0);
  for (int s = 0; s < kShards; ++s) EXPECT_EQ(dropped_[s].Value(), 1) << "shard " << s;
  // Step 1: again without worker 2, whose step-0 push began, so nothing holds step 1.
  FastWorkersStep(1, sum0, sum1);
  EXPECT_EQ(sum0, std::vector<float>(kParameters, 3.0f));
  sum2 = Share(2);
  ASSERT_TRUE(clients_[2]->Sum(1, absl::MakeSpan(sum2)).ok());
  EXPECT_EQ(sum2, sum0);
  for (int s = 0; s < kShards; ++s) {
    EXPECT_EQ(dropped_[s].Value(), 2) << "shard " << s;
    // Every worker applied the same sums; the shard never applied a dropped share.
    EXPECT_EQ(*services_[s]->current()->state->parameters(),
              std::vector<float>(services_[s]->current()->state->range_elements(), -6.0f));
  }
}

TEST_F(BackupWorkersGrpcTest, AllThreeInTimeAreAllSummed) {
  std::vector<std::vector<float>> sums(kWorkers);
  std::vector<std::thread> threads;
  std::vector<absl::Status> statuses(kWorkers);
  // Worker 2 pushes first and alone: one whole share is not a quorum, so it waits for the others
  // and the step then holds whichever whole shares were in when the second completed: 2 or 3.
  for (int w = 0; w < kWorkers; ++w) {
    sums[w] = Share(w);
    threads.emplace_back([&, w] { statuses[w] = clients_[w]->Sum(0, absl::MakeSpan(sums[w])); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int w = 0; w < kWorkers; ++w) ASSERT_TRUE(statuses[w].ok()) << statuses[w];
  // Whoever was dropped, every worker holds the same sum. Each shard decides its quorum alone,
  // so each range is the sum of some two workers' shares or of all three.
  for (int w = 1; w < kWorkers; ++w) EXPECT_EQ(sums[w], sums[0]);
  for (const ElementRange& range : EvenRanges(kParameters, kShards)) {
    const float total = sums[0][range.begin];
    EXPECT_TRUE(total == 3.0f || total == 4.0f || total == 5.0f || total == 6.0f) << total;
    for (uint64_t i = range.begin; i < range.end; ++i) ASSERT_EQ(sums[0][i], total) << i;
  }
  for (int s = 0; s < kShards; ++s) EXPECT_LE(dropped_[s].Value(), 1);
}

}  // namespace
}  // namespace ringside::server
