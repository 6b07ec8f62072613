// The worker's PS client against real shards over gRPC in this process: steps agree with the
// shards, every payload byte is counted, no thread is started per step, Cancel() ends a step in
// flight at once, and a shard's refusal comes back as the step's status.
#include "server/ps/ps_client.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/ps/ps_service.h"
#include "tests/support/ps_test_hooks.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 1000;
constexpr int kShards = 3;
constexpr uint64_t kSegmentBytes = 256;  // 64 elements: every shard's range takes 6 segments

// The threads of this process that carry the main thread's name. gRPC names its own threads
// (executor, timers, event engine); a std::thread inherits its creator's name, so a thread
// started by PsClient shows up here.
std::set<std::string> UnnamedThreads() {
  std::set<std::string> threads;
  auto name = [](const std::string& tid) {
    std::ifstream comm("/proc/self/task/" + tid + "/comm");
    std::string text;
    std::getline(comm, text);
    return text;
  };
  const std::string main_name = name(std::to_string(getpid()));
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return threads;
  while (const dirent* entry = readdir(tasks)) {
    const std::string tid = entry->d_name;
    if (tid == "." || tid == "..") continue;
    if (name(tid) == main_name) threads.insert(tid);
  }
  closedir(tasks);
  return threads;
}

// The trainer's use of a client (worker/parameter_sync.h): the shards' sum, then its own copy of
// their optimiser applied to it.
absl::Status SumAndApply(PsClient& client, Optimizer& optimizer, int64_t step,
                         std::vector<float>& gradient, std::vector<float>& params) {
  RETURN_IF_ERROR(client.Sum(step, absl::MakeSpan(gradient)));
  return optimizer.Step(absl::MakeSpan(params), gradient);
}

// Worker `w`'s link to shard `s`, as the worker counted it: `bytes` sent and as many expected by
// the cost model, `bytes` received back.
void ExpectShardLinkBytes(Metrics& metrics, int w, int s, double bytes) {
  const LinkSendMetrics up = metrics.LinkSend(WorkerName(w), PsShardName(s), SyncMode::kPs);
  const LinkReceiveMetrics down = metrics.LinkReceive(PsShardName(s), WorkerName(w), SyncMode::kPs);
  EXPECT_EQ(up.bytes->Value(), bytes) << WorkerName(w) << " -> " << PsShardName(s);
  EXPECT_EQ(up.expected_bytes->Value(), bytes) << WorkerName(w) << " -> " << PsShardName(s);
  EXPECT_EQ(down.bytes->Value(), bytes) << PsShardName(s) << " -> " << WorkerName(w);
}

// --colocate (S = N, shard h on worker h's host): the payload crossing host h's link each way per
// step, summed from the workers' own link counters, is the cost model's ColocatedPsHostElements:
// out, worker h's pushes to the other shards and shard h's replies to the other workers; in,
// the other workers' pushes to shard h and the other shards' replies to worker h.
void ExpectColocatedHostBytes(const std::vector<std::unique_ptr<Metrics>>& metrics, int steps) {
  const int n = static_cast<int>(metrics.size());
  for (int h = 0; h < n; ++h) {
    double out = 0, in = 0;
    for (int other = 0; other < n; ++other) {
      if (other == h) continue;  // the worker and its own shard: never on the link
      out += metrics[h]->LinkSend(WorkerName(h), PsShardName(other), SyncMode::kPs).bytes->Value();
      out += metrics[other]
                 ->LinkReceive(PsShardName(h), WorkerName(other), SyncMode::kPs)
                 .bytes->Value();
      in +=
          metrics[other]->LinkSend(WorkerName(other), PsShardName(h), SyncMode::kPs).bytes->Value();
      in +=
          metrics[h]->LinkReceive(PsShardName(other), WorkerName(h), SyncMode::kPs).bytes->Value();
    }
    const double expected =
        static_cast<double>(ColocatedPsHostElements(kParameters, n, h) * sizeof(float) * steps);
    EXPECT_EQ(out, expected) << "host " << h << " out";
    EXPECT_EQ(in, expected) << "host " << h << " in";
  }
}

class PsClientTest : public ::testing::Test {
 protected:
  // kShards shards of generation `generation` for `workers` workers, every parameter at 100
  // (or `initial`) and SGD (or `optimizer`).
  void StartShards(int workers, uint64_t generation = 1,
                   OptimizerConfig optimizer = {OptimizerKind::kSgd, 1.0f},
                   std::vector<float> initial = std::vector<float>(kParameters, 100.0f)) {
    const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
    for (int s = 0; s < kShards; ++s) {
      auto state = server::ShardState::Create(
          server::ShardConfig{generation, workers, s},
          std::vector<float>(initial.begin() + ranges[s].begin, initial.begin() + ranges[s].end),
          optimizer);
      ASSERT_TRUE(state.ok()) << state.status();
      services_.push_back(std::make_unique<server::ParameterShardService>(kSegmentBytes));
      services_.back()->Serve(
          server::ShardGeneration{server::Shard::Synchronous(*std::move(state)), {}});
      auto started = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      ASSERT_TRUE(started.ok()) << started.status();
      addresses_.push_back("127.0.0.1:" + std::to_string(started->port));
      servers_.push_back(*std::move(started));
    }
  }

  PsClientOptions Options() const {
    PsClientOptions options;
    options.shards = addresses_;
    options.segment_bytes = kSegmentBytes;
    options.timeout = absl::Seconds(60);  // far beyond any test: reaching it is a failure
    return options;
  }

  // The worker's copy of the shards' optimiser: it applies the summed gradient the shards return.
  Optimizer sgd_ =
      Optimizer::Create(OptimizerConfig{OptimizerKind::kSgd, 1.0f}, kParameters).value();
  std::vector<std::unique_ptr<server::ParameterShardService>> services_;  // outlive the servers
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
};

TEST_F(PsClientTest, StepsAgreeWithTheShardsAndEveryPayloadByteIsCounted) {
  StartShards(/*workers=*/1);
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  auto sync = PsClient::Create(Options(), kParameters, &metrics);
  ASSERT_TRUE(sync.ok()) << sync.status();
  constexpr int kSteps = 20;
  std::vector<float> params(kParameters, 100.0f);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> gradient(kParameters, 1.0f);
    ASSERT_TRUE(SumAndApply(**sync, sgd_, step, gradient, params).ok());
    ASSERT_EQ(params, std::vector<float>(kParameters, 100.0f - (step + 1)));
  }
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int s = 0; s < kShards; ++s) {
    ExpectShardLinkBytes(metrics, 0, s,
                         static_cast<double>(ranges[s].size() * sizeof(float) * kSteps));
    EXPECT_EQ(metrics.LinkSend(WorkerName(0), PsShardName(s), SyncMode::kPs).messages->Value(),
              6.0 * kSteps)
        << PsShardName(s);
  }
}

// Issue 26: shards sum and answer segment by segment. Three workers step together, each
// pushing in its own segment size (so each shard's segments of every share interleave in
// different cuts), Adam on the shards and on the workers: every worker's parameters and every
// shard's range are the bits of one process summing whole gradients in rank order and stepping
// the whole vector, and every link carries exactly the bytes of the cost model.
TEST_F(PsClientTest, StreamedStepsAreBitIdenticalToAWholeRangeReference) {
  constexpr int kWorkers = 3;
  constexpr int kSteps = 5;
  const uint64_t segment_bytes[kWorkers] = {256, 40, 1000};
  const uint64_t window_bytes[kWorkers] = {uint64_t{1} << 20, 64, 1000};  // segments of 16, 250 B
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  adam.learning_rate = 0.01f;
  std::mt19937 random(2026);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> initial(kParameters);
  for (float& value : initial) value = unit(random);
  // gradients[step][worker], magnitudes 1e7 apart: another summation order changes the bits.
  std::vector<std::vector<std::vector<float>>> gradients(kSteps);
  for (auto& step : gradients) {
    for (int w = 0; w < kWorkers; ++w) {
      step.emplace_back(kParameters);
      for (float& value : step.back()) value = unit(random) * (w == 1 ? 1.0f : 1e7f);
    }
  }
  std::vector<float> expected = initial;
  Optimizer reference = Optimizer::Create(adam, kParameters).value();
  for (const auto& step : gradients) {
    std::vector<float> sum = step[0];
    for (int w = 1; w < kWorkers; ++w) {
      for (uint64_t i = 0; i < kParameters; ++i) sum[i] += step[w][i];
    }
    ASSERT_TRUE(reference.Step(absl::MakeSpan(expected), sum).ok());
  }

  StartShards(kWorkers, 1, adam, initial);
  std::vector<std::unique_ptr<Metrics>> metrics;
  std::vector<std::vector<float>> params(kWorkers, initial);
  std::vector<absl::Status> results(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    metrics.push_back(std::make_unique<Metrics>(std::make_shared<prometheus::Registry>()));
  }
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      PsClientOptions options = Options();
      options.rank = w;
      options.segment_bytes = segment_bytes[w];
      options.window_bytes = window_bytes[w];
      Optimizer optimizer = Optimizer::Create(adam, kParameters).value();
      auto sync = PsClient::Create(options, kParameters, metrics[w].get());
      if (!sync.ok()) {
        results[w] = sync.status();
        return;
      }
      for (int step = 0; step < kSteps && results[w].ok(); ++step) {
        std::vector<float> gradient = gradients[step][w];
        results[w] = SumAndApply(**sync, optimizer, step, gradient, params[w]);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();

  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(results[w].ok()) << WorkerName(w) << ": " << results[w];
    EXPECT_EQ(std::memcmp(params[w].data(), expected.data(), kParameters * sizeof(float)), 0)
        << WorkerName(w) << "'s parameters";
    for (int s = 0; s < kShards; ++s) {
      ExpectShardLinkBytes(*metrics[w], w, s,
                           static_cast<double>(ranges[s].size() * sizeof(float) * kSteps));
    }
  }
  static_assert(kWorkers == kShards, "the colocated placement has a shard per worker");
  ExpectColocatedHostBytes(metrics, kSteps);
  for (int s = 0; s < kShards; ++s) {
    const server::ShardState::Applied applied =
        services_[s]->current()->shard->steps()->applied().value();
    EXPECT_EQ(applied.step, static_cast<uint64_t>(kSteps));
    ASSERT_EQ(applied.values->size(), ranges[s].size());
    EXPECT_EQ(std::memcmp(applied.values->data(), expected.data() + ranges[s].begin,
                          ranges[s].size() * sizeof(float)),
              0)
        << PsShardName(s) << "'s range";
  }
}

// In the middle of every step (the test hook runs once shard 0 has the share) the process's
// threads are listed. A thread started per step would be a new one at every step, at least 20
// in all. gRPC's pools may grow meanwhile, and a thread it has just started has not named itself
// yet, so a few new ones may show up unnamed; fewer than one per step proves none is per step.
// A worker's pushes to a shard stop a window ahead of the sum it has back, and go on as the sum
// arrives: with the other worker not yet pushing, no sum can come back, so worker 0 stops at
// exactly one window on every shard; once worker 1 pushes, both finish with the exact sum.
TEST_F(PsClientTest, PushesStopOneWindowAheadOfTheSumAndResumeAsItArrives) {
  StartShards(/*workers=*/2);
  constexpr uint64_t kWindowElements = 32;  // segments of 8: four pushed per window
  struct Wait {
    int shard;
    uint64_t written, received;
  };
  absl::Mutex mu;
  std::vector<Wait> waits;
  absl::Notification every_shard_waits;
  PsClientOptions first = Options();
  first.window_bytes = kWindowElements * sizeof(float);
  first.window_full = [&](int shard, uint64_t written, uint64_t received) {
    absl::MutexLock lock(&mu);
    waits.push_back({shard, written, received});
    std::set<int> shards;
    for (const Wait& wait : waits) shards.insert(wait.shard);
    if (shards.size() == kShards && !every_shard_waits.HasBeenNotified()) {
      every_shard_waits.Notify();
    }
  };
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  auto worker0 = PsClient::Create(first, kParameters, &metrics);
  ASSERT_TRUE(worker0.ok()) << worker0.status();
  std::vector<float> gradient0(kParameters, 1.0f);
  absl::Status result0;
  std::thread pushing([&] { result0 = (*worker0)->Sum(0, absl::MakeSpan(gradient0)); });

  // A failure guard, not a timed assertion: without the window worker 0 never waits.
  const bool waited = every_shard_waits.WaitForNotificationWithTimeout(absl::Seconds(60));
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(waited) << "worker 0 waited on " << waits.size() << " shard(s) only";
    for (const Wait& wait : waits) {  // nothing can have come back yet
      EXPECT_EQ(wait.written, kWindowElements) << PsShardName(wait.shard);
      EXPECT_EQ(wait.received, 0u) << PsShardName(wait.shard);
    }
  }
  PsClientOptions second = Options();
  second.rank = 1;
  auto worker1 = PsClient::Create(second, kParameters, nullptr);
  ASSERT_TRUE(worker1.ok()) << worker1.status();
  std::vector<float> gradient1(kParameters, 2.0f);
  const absl::Status result1 = (*worker1)->Sum(0, absl::MakeSpan(gradient1));
  pushing.join();

  ASSERT_TRUE(result0.ok()) << result0;
  ASSERT_TRUE(result1.ok()) << result1;
  EXPECT_EQ(gradient0, std::vector<float>(kParameters, 3.0f));
  EXPECT_EQ(gradient1, std::vector<float>(kParameters, 3.0f));
  absl::MutexLock lock(&mu);
  EXPECT_GT(waits.size(), static_cast<size_t>(kShards));  // it waited again after resuming
  for (const Wait& wait : waits) {
    EXPECT_EQ(wait.written - wait.received, kWindowElements) << PsShardName(wait.shard);
  }
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int s = 0; s < kShards; ++s) {  // every element pushed once
    EXPECT_EQ(metrics.LinkSend(WorkerName(0), PsShardName(s), SyncMode::kPs).bytes->Value(),
              static_cast<double>(ranges[s].size() * sizeof(float)));
  }
}

TEST_F(PsClientTest, StartsNoThreadPerStep) {
  StartShards(/*workers=*/1);
  const std::set<std::string> before = UnnamedThreads();
  std::set<std::string> started;  // seen during a step and not before
  int steps = 0;
  PsClientOptions options = Options();
  options.pushed_to_first_shard = [&](int64_t) {
    ++steps;
    for (const std::string& tid : UnnamedThreads()) {
      if (before.count(tid) == 0) started.insert(tid);
    }
    return false;
  };
  auto sync = PsClient::Create(options, kParameters, nullptr);
  ASSERT_TRUE(sync.ok()) << sync.status();
  constexpr int kSteps = 20;
  std::vector<float> params(kParameters, 100.0f);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> gradient(kParameters, 1.0f);
    ASSERT_TRUE(SumAndApply(**sync, sgd_, step, gradient, params).ok());
  }
  EXPECT_EQ(steps, kSteps);
  EXPECT_LT(started.size(), static_cast<size_t>(kSteps))
      << started.size() << " threads started during " << kSteps << " steps";
}

// Elastic regroups supersede a generation with Cancel(): a step waiting for a worker that is
// gone must end at once (CANCELLED), not at its deadline, and so must every later one.
TEST_F(PsClientTest, CancelEndsTheStepInFlightAndEveryLaterOne) {
  StartShards(/*workers=*/2);  // worker 1 never pushes: the step waits for it
  absl::Notification in_flight;
  PsClientOptions options = Options();
  options.pushed_to_first_shard = [&](int64_t) {
    if (!in_flight.HasBeenNotified()) in_flight.Notify();
    return false;
  };
  auto sync = PsClient::Create(options, kParameters, nullptr);
  ASSERT_TRUE(sync.ok()) << sync.status();
  std::vector<float> params(kParameters, 100.0f);
  std::vector<float> gradient(kParameters, 1.0f);
  absl::Status status;
  std::thread stepping([&] { status = SumAndApply(**sync, sgd_, 0, gradient, params); });
  in_flight.WaitForNotification();  // shard 0 holds the share and waits for worker 1
  (*sync)->Cancel();                // from another thread, as the controller client's watch does
  stepping.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(params, std::vector<float>(kParameters, 100.0f)) << "nothing half-applied";

  const absl::Status later = SumAndApply(**sync, sgd_, 0, gradient, params);
  EXPECT_EQ(later.code(), absl::StatusCode::kCancelled) << later;
}

TEST_F(PsClientTest, AShardsRefusalIsTheStepsStatusNamingShardAndStep) {
  StartShards(/*workers=*/1, /*generation=*/2);
  auto sync = PsClient::Create(Options(), kParameters, nullptr);  // generation 1: stale
  ASSERT_TRUE(sync.ok()) << sync.status();
  std::vector<float> params(kParameters, 100.0f);
  std::vector<float> gradient(kParameters, 1.0f);
  const absl::Status status = SumAndApply(**sync, sgd_, 7, gradient, params);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(PsShardName(0) + " (" + addresses_[0] + ") step 7"),
            std::string::npos)
      << status;
}

// An overlapped step (worker/overlapped_sync.h): the share becomes final from the end in odd
// pieces, each prepared for the wire as it is, while SumAsReady pushes each shard its share last
// part first as it becomes final. The last shard answers part of its sum while the rest of its
// range is not final on any worker (within one shard, not only across shards). The sum is the
// very bits of Sum's on the same shares (the shard sums each element in rank order whenever it
// came), in every wire dtype, and every link carries exactly the cost model's bytes.
class PsClientOverlapTest : public PsClientTest, public ::testing::WithParamInterface<WireDtype> {};

// The part of a gradient that is final: [ready_from, K), growing from the end.
class Readiness {
 public:
  explicit Readiness(uint64_t size) : ready_from_(size) {}
  void MarkReadyFrom(uint64_t begin) {
    absl::MutexLock lock(&mu_);
    ready_from_ = std::min(ready_from_, begin);
  }
  std::optional<uint64_t> Await(uint64_t begin) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_from_ <= begin; };
    mu_.Await(absl::Condition(&ready));
    return ready_from_;
  }

 private:
  absl::Mutex mu_;
  uint64_t ready_from_ ABSL_GUARDED_BY(mu_);
};

TEST_P(PsClientOverlapTest, SumAsReadyGivesSumsBitsAndTheCostModelsBytes) {
  const WireDtype wire = GetParam();
  constexpr int kWorkers = 2;
  StartShards(kWorkers);
  // The last shard starts its reply to each worker (the first is the overlapped step's). The
  // hook may still run after this test's body (a stream's last events), so what it writes is
  // shared with it, not a local of the body's.
  struct Replies {
    absl::Mutex mu;
    std::vector<char> replying = std::vector<char>(kWorkers, 0);
  };
  auto replies = std::make_shared<Replies>();
  PsTestHooks::SetStepHook(*services_.back(), [replies](PsTestHooks::StepEvent event, int worker) {
    absl::MutexLock lock(&replies->mu);
    if (event == PsTestHooks::StepEvent::kReplyStarting && worker >= 0 && worker < kWorkers) {
      replies->replying[worker] = 1;
    }
  });
  std::vector<std::vector<float>> shares(kWorkers, std::vector<float>(kParameters));
  for (int w = 0; w < kWorkers; ++w) {
    for (uint64_t i = 0; i < kParameters; ++i) {
      shares[w][i] = 0.001f * static_cast<float>((i * 7919 + w * 104729) % 2003) - 1.0f;
    }
  }
  // Pieces of odd sizes, the last first, as buckets of odd layers would come.
  const std::vector<uint64_t> boundaries = {kParameters - 47, 777, 333, 101, 0};
  std::vector<std::vector<float>> summed(kWorkers), overlapped(kWorkers);
  std::vector<std::unique_ptr<Metrics>> metrics;
  for (int w = 0; w < kWorkers; ++w) {
    metrics.push_back(std::make_unique<Metrics>(std::make_shared<prometheus::Registry>()));
  }
  std::vector<absl::Status> results(kWorkers);
  std::vector<char> replied_early(kWorkers, 0);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      PsClientOptions options = Options();
      options.rank = w;
      options.workers = kWorkers;
      options.wire_dtype = wire;
      auto client = PsClient::Create(options, kParameters, metrics[w].get());
      if (!client.ok()) {
        results[w] = client.status();
        return;
      }
      overlapped[w] = shares[w];
      Readiness readiness(kParameters);
      absl::Status status;
      std::thread sync([&] {
        status = (*client)->SumAsReady(0, absl::MakeSpan(overlapped[w]),
                                       [&](uint64_t begin) { return readiness.Await(begin); });
      });
      uint64_t end = kParameters;
      for (uint64_t begin : boundaries) {
        (*client)->PrepareShare(absl::MakeSpan(overlapped[w]).subspan(begin, end - begin));
        readiness.MarkReadyFrom(begin);
        end = begin;
        if (begin == boundaries[0]) {
          // Only the last 47 elements are final (the last shard's range is [667, 1000)): its
          // reply to this worker starts anyway. Not a timing condition: the bound turns a hang
          // into a failure.
          absl::MutexLock lock(&replies->mu);
          const auto replying_to_me = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(replies->mu) {
            return replies->replying[w] != 0;
          };
          replied_early[w] =
              replies->mu.AwaitWithTimeout(absl::Condition(&replying_to_me), absl::Minutes(1));
        }
      }
      sync.join();
      results[w] = status;
      if (!results[w].ok()) return;
      summed[w] = shares[w];
      results[w] = (*client)->Sum(1, absl::MakeSpan(summed[w]));
    });
  }
  for (std::thread& worker : workers) worker.join();
  const std::vector<ElementRange> ranges = EvenRanges(kParameters, kShards);
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(results[w].ok()) << WorkerName(w) << ": " << results[w];
    EXPECT_TRUE(replied_early[w]) << WorkerName(w);
    EXPECT_EQ(std::memcmp(overlapped[w].data(), summed[w].data(), kParameters * sizeof(float)), 0)
        << WorkerName(w);
    for (int s = 0; s < kShards; ++s) {
      ExpectShardLinkBytes(
          *metrics[w], w, s,
          2.0 * static_cast<double>(PsBytesPerShardLink(ranges[s].size(), 1, 0, wire)));
    }
  }
  EXPECT_EQ(std::memcmp(overlapped[0].data(), overlapped[1].data(), kParameters * sizeof(float)),
            0);
}

INSTANTIATE_TEST_SUITE_P(EveryWireDtype, PsClientOverlapTest,
                         ::testing::Values(WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16),
                         [](const auto& info) { return std::string(WireDtypeName(info.param)); });

}  // namespace
}  // namespace ringside::server
