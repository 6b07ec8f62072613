// Training on Iris with the shards holding the parameters and applying each worker's gradient
// as it arrives (--staleness=2 and async; server/ps/stale_shard.h, worker/push_pull_sync.h):
// three trainers as threads, the real step loop, two StaleShards in the same process, reached
// directly (tests/support/stale_links.h) or through the real ParameterShard service's PushPull
// streams on loopback (server/ps/stale_client.h). Whatever the interleaving, the job still
// reaches the accuracy single-process training reaches (tests/worker/iris_training_test.cc: 95%
// on the whole data set), on the shards' parameters and on every worker's last pull.
#include <memory>
#include <thread>
#include <vector>

#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"
#include "server/ps/stale_client.h"
#include "server/ps/stale_shard.h"
#include "tests/support/stale_links.h"
#include "worker/data_parallel.h"
#include "worker/push_pull_sync.h"

namespace ringside::worker {
namespace {

constexpr int kWorkers = 3;
constexpr int kShards = 2;
constexpr absl::Duration kDeadline = absl::Seconds(60);  // a hang fails; no result depends on it

struct StaleJob {
  std::vector<ElementRange> ranges;
  std::vector<std::unique_ptr<server::StaleShard>> shards;
};

StaleJob MakeShards(const TrainingOptions& options) {
  StaleJob job;
  const ModelSpec spec = *ModelSpec::Parse(options.model, options.activation);
  const std::vector<float> initial = InitialParameters(spec, options.seed);
  job.ranges = EvenRanges(initial.size(), kShards);
  for (int s = 0; s < kShards; ++s) {
    const ElementRange& range = job.ranges[s];
    auto shard = server::StaleShard::Create(
        server::StaleShardConfig{1, kWorkers, s, options.staleness, 0},
        {initial.begin() + range.begin, initial.begin() + range.end}, {}, options.optimizer);
    EXPECT_TRUE(shard.ok()) << shard.status();
    job.shards.push_back(std::move(*shard));
  }
  return job;
}

// The shards behind ParameterShard services on loopback, as a shard daemon serves them.
struct Served {
  std::vector<std::unique_ptr<server::ParameterShardService>> services;  // outlive the servers
  std::vector<StartedServer> servers;
  std::vector<std::string> addresses;
};

Served Serve(const StaleJob& job, const TrainingOptions& options) {
  Served served;
  for (int s = 0; s < kShards; ++s) {
    auto state = server::ShardState::Create(server::ShardConfig{1, kWorkers, s},
                                            *job.shards[s]->Read().values, options.optimizer);
    EXPECT_TRUE(state.ok()) << state.status();
    served.services.push_back(std::make_unique<server::ParameterShardService>(64));
    server::ShardGeneration generation;
    generation.state = *std::move(state);
    // The test keeps ownership; the service shares it without deleting it.
    generation.stale =
        std::shared_ptr<server::StaleShard>(job.shards[s].get(), [](server::StaleShard*) {});
    served.services.back()->Serve(std::move(generation));
    auto started = StartServer("127.0.0.1:0", {served.services.back().get()}, TransportSecurity());
    EXPECT_TRUE(started.ok()) << started.status();
    served.addresses.push_back("127.0.0.1:" + std::to_string(started->port));
    served.servers.push_back(*std::move(started));
  }
  return served;
}

void TrainAndExpectAccuracy(int64_t staleness, bool over_grpc = false) {
  TrainingOptions options;
  options.staleness = staleness;
  StaleJob job = MakeShards(options);
  Served served;
  if (over_grpc) served = Serve(job, options);
  std::vector<absl::StatusOr<TrainingResult>> results(kWorkers, absl::UnknownError("did not run"));
  std::vector<std::thread> trainers;
  for (int rank = 0; rank < kWorkers; ++rank) {
    trainers.emplace_back([&, rank] {
      std::vector<std::unique_ptr<server::StaleShardLink>> links;
      std::unique_ptr<server::StalePsClient> client;
      if (over_grpc) {
        server::PsClientOptions client_options;
        client_options.rank = rank;
        client_options.shards = served.addresses;
        client_options.segment_bytes = 64;  // many segments per range
        client_options.timeout = kDeadline;
        client = *server::StalePsClient::Create(client_options, job.ranges.back().end, nullptr);
        links = client->Links();
      } else {
        for (auto& shard : job.shards) {
          links.push_back(std::make_unique<testing::InProcessStaleLink>(*shard, rank, kDeadline));
        }
      }
      PushPullSync sync(job.ranges, std::move(links));
      results[rank] = TrainDataParallel(options, WorkerSlot{rank, kWorkers}, sync, nullptr);
    });
  }
  for (std::thread& trainer : trainers) trainer.join();
  for (int rank = 0; rank < kWorkers; ++rank) {
    ASSERT_TRUE(results[rank].ok()) << results[rank].status();
    EXPECT_EQ(results[rank]->steps, options.steps);
    EXPECT_GE(results[rank]->final_eval.accuracy, 0.95) << "worker " << rank;
  }
  // The shards' own parameters, every update applied.
  std::vector<float> parameters;
  for (int s = 0; s < kShards; ++s) {
    ASSERT_TRUE(job.shards[s]->AwaitSettled(kWorkers * options.steps, kDeadline).ok());
    const server::StaleRead read = job.shards[s]->Read();
    EXPECT_EQ(read.version, static_cast<uint64_t>(kWorkers * options.steps));
    parameters.insert(parameters.end(), read.values->begin(), read.values->end());
  }
  auto evaluator = TrainingJob::Create(options);
  ASSERT_TRUE(evaluator.ok());
  auto eval = (*evaluator)->Evaluate(parameters);
  ASSERT_TRUE(eval.ok());
  EXPECT_GE(eval->accuracy, 0.95);
}

TEST(StaleTrainingTest, BoundedStalenessTwoReachesTheAccuracy) { TrainAndExpectAccuracy(2); }

TEST(StaleTrainingTest, AsyncReachesTheAccuracy) { TrainAndExpectAccuracy(kAsyncStaleness); }

TEST(StaleTrainingTest, BoundedStalenessOverTheShardServiceReachesTheAccuracy) {
  TrainAndExpectAccuracy(2, /*over_grpc=*/true);
}

TEST(StaleTrainingTest, AsyncOverTheShardServiceReachesTheAccuracy) {
  TrainAndExpectAccuracy(kAsyncStaleness, /*over_grpc=*/true);
}

// --straggler's arithmetic (benchmarks use it; no test depends on its sleep).
TEST(StragglerTest, OnlyTheNamedRankWaitsFactorMinusOneTimesItsCompute) {
  const Straggler straggler{2, 3.0f};
  EXPECT_EQ(StragglerDelay(straggler, 2, absl::Milliseconds(10)), absl::Milliseconds(20));
  EXPECT_EQ(StragglerDelay(straggler, 1, absl::Milliseconds(10)), absl::ZeroDuration());
  EXPECT_EQ(StragglerDelay(Straggler{}, 0, absl::Milliseconds(10)), absl::ZeroDuration());
  EXPECT_EQ(StragglerDelay(Straggler{2, 1.0f}, 2, absl::Milliseconds(10)), absl::ZeroDuration());
}

}  // namespace
}  // namespace ringside::worker
