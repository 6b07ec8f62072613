// Training on Iris with the shards holding the parameters and applying each worker's gradient
// as it arrives (--staleness=2 and async) or each step with the first two of three workers'
// (--backup_workers=1; server/ps/push_pull_shard.h, worker/push_pull_sync.h):
// three trainers as threads, the real step loop, two StaleShards in the same process, reached
// directly (tests/support/stale_links.h) or through the real ParameterShard service's PushPull
// streams on loopback (server/ps/push_pull_client.h). Whatever the interleaving, the job still
// reaches the accuracy single-process training reaches (tests/worker/iris_training_test.cc: 95%
// on the whole data set), on the shards' parameters and on every worker's last pull.
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"
#include "server/ps/push_pull_client.h"
#include "server/ps/push_pull_shard.h"
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
  std::vector<std::unique_ptr<server::PushPullShard>> shards;
};

StaleJob MakeShards(const TrainingOptions& options) {
  StaleJob job;
  const ModelSpec spec = *ModelSpec::Parse(options.model, options.activation);
  const std::vector<float> initial = InitialParameters(spec, options.seed);
  job.ranges = EvenRanges(initial.size(), kShards);
  for (int s = 0; s < kShards; ++s) {
    const ElementRange& range = job.ranges[s];
    auto shard = server::PushPullShard::Create(
        server::PushPullShardConfig{1, kWorkers, s, options.staleness, 0, options.backup_workers},
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
  uint64_t begin = 0;  // the shards' ranges lie end to end
  for (int s = 0; s < kShards; ++s) {
    served.services.push_back(std::make_unique<server::ParameterShardService>(64));
    server::ShardGeneration generation;
    // The test keeps ownership; the service shares it without deleting it.
    generation.shard = server::Shard::PushPull(
        std::shared_ptr<server::PushPullShard>(job.shards[s].get(), [](server::PushPullShard*) {}));
    generation.range = ElementRange{begin, begin + job.shards[s]->range_elements()};
    begin = generation.range->end;
    served.services.back()->Serve(std::move(generation));
    auto started = StartServer("127.0.0.1:0", {served.services.back().get()}, TransportSecurity());
    EXPECT_TRUE(started.ok()) << started.status();
    served.addresses.push_back("127.0.0.1:" + std::to_string(started->port));
    served.servers.push_back(*std::move(started));
  }
  return served;
}

void TrainAndExpectAccuracy(int64_t staleness, bool over_grpc = false, int64_t backup_workers = 0) {
  TrainingOptions options;
  options.staleness = staleness;
  options.backup_workers = backup_workers;
  // Updates per shard: one per push, or (backup workers) one per step.
  const uint64_t updates = backup_workers > 0 ? options.steps : kWorkers * options.steps;
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
      std::optional<VersionSteps> version_steps;
      if (backup_workers > 0) version_steps = VersionSteps{0, options.steps};
      PushPullSync sync(job.ranges, std::move(links), version_steps);
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
    ASSERT_TRUE(job.shards[s]->AwaitSettled(updates, kDeadline).ok());
    const server::PushPullRead read = job.shards[s]->Read();
    EXPECT_EQ(read.version, updates);
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

TEST(StaleTrainingTest, BackupWorkersReachTheAccuracy) {
  TrainAndExpectAccuracy(0, /*over_grpc=*/false, /*backup_workers=*/1);
}

TEST(StaleTrainingTest, BackupWorkersOverTheShardServiceReachTheAccuracy) {
  TrainAndExpectAccuracy(0, /*over_grpc=*/true, /*backup_workers=*/1);
}

// A link held before its first push until the test releases it: a worker whose first step
// outlasts the whole job of the others.
class HeldLink final : public server::StaleShardLink {
 public:
  HeldLink(std::unique_ptr<server::StaleShardLink> link, absl::Notification& release)
      : link_(std::move(link)), release_(release) {}
  absl::Status Start(uint64_t step, uint64_t read_version,
                     absl::Span<const float> gradient) override {
    if (!release_.WaitForNotificationWithTimeout(kDeadline)) {
      return absl::DeadlineExceededError("never released");
    }
    return link_->Start(step, read_version, gradient);
  }
  absl::StatusOr<uint64_t> Finish(absl::Span<float> params) override {
    return link_->Finish(params);
  }

 private:
  std::unique_ptr<server::StaleShardLink> link_;
  absl::Notification& release_;
};

TEST(StaleTrainingTest, WithABackupWorkerTheOthersFinishWithoutTheSlowOneWhichThenSkipsToTheEnd) {
  TrainingOptions options;
  options.backup_workers = 1;
  StaleJob job = MakeShards(options);
  absl::Notification release;
  std::vector<absl::StatusOr<TrainingResult>> results(kWorkers, absl::UnknownError("did not run"));
  std::vector<int64_t> trained(kWorkers, 0);
  std::vector<std::thread> trainers;
  for (int rank = 0; rank < kWorkers; ++rank) {
    trainers.emplace_back([&, rank] {
      std::vector<std::unique_ptr<server::StaleShardLink>> links;
      for (auto& shard : job.shards) {
        std::unique_ptr<server::StaleShardLink> link =
            std::make_unique<testing::InProcessStaleLink>(*shard, rank, kDeadline);
        if (rank == kWorkers - 1) link = std::make_unique<HeldLink>(std::move(link), release);
        links.push_back(std::move(link));
      }
      PushPullSync sync(job.ranges, std::move(links), VersionSteps{0, options.steps});
      results[rank] = TrainDataParallel(
          options, WorkerSlot{rank, kWorkers}, sync, nullptr,
          [&trained, rank](int64_t, const GradientStats&, absl::Span<const float>) {
            ++trained[rank];
            return true;
          });
    });
  }
  // Workers 0 and 1 make every step's quorum alone.
  trainers[0].join();
  trainers[1].join();
  release.Notify();
  trainers[2].join();
  for (int rank = 0; rank < kWorkers; ++rank) {
    ASSERT_TRUE(results[rank].ok()) << results[rank].status();
    EXPECT_EQ(results[rank]->steps, options.steps) << "worker " << rank;
  }
  EXPECT_EQ(trained[0], options.steps);
  EXPECT_EQ(trained[1], options.steps);
  EXPECT_EQ(trained[2], 1);  // its one push came after the last step: dropped, and it is done
  for (const auto& shard : job.shards) {
    EXPECT_EQ(shard->Read().version, static_cast<uint64_t>(options.steps));
    EXPECT_EQ(shard->completed(2), 0u);
  }
  EXPECT_GE(results[2]->final_eval.accuracy, 0.95);  // on the others' parameters
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
