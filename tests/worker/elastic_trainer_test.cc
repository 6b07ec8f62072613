// The elastic trainer in one process: three trainers as threads over an in-memory ring network,
// real ParameterShard services on loopback, and a fake controller over the real membership
// rules (server/controller/membership.h) with a manual clock. A worker is lost at each named point
// of the protocol (worker/fault_injection.h: the trainer stops there as if killed; the test then
// cuts its ring links and expires it from the membership, as the heartbeat timeout would), and the
// survivors must finish with identical parameters equal to one process training the same
// steps. Nothing waits on a clock: faults fire at protocol points, the mode switch fires when a
// trainer reports a step count, and the end is every survivor's finished callback.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/compression.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "prometheus/registry.h"
#include "ring/memory_transport.h"
#include "server/controller/membership.h"
#include "server/ps/ps_service.h"
#include "tests/support/idx_files.h"
#include "tests/support/parameters.h"
#include "tests/support/ps_test_hooks.h"
#include "worker/assignment_source.h"
#include "worker/elastic_training.h"
#include "worker/fault_injection.h"
#include "worker/gradient_buckets.h"
#include "worker/local_training.h"
#include "worker/regroup.h"

namespace ringside::worker {
namespace {

// The trainer stops at the plan's point as if killed (ElasticTrainer::Run returns ABORTED there,
// sending nothing more); ringside-worker raises SIGKILL there instead (KillSelfAt).
FaultHook LoseAt(FaultPlan plan) {
  return [plan = std::move(plan)](absl::string_view point, int64_t completed) {
    return plan.FiresAt(point, completed);
  };
}

// A member's own secret (common/auth.h); its value does not matter to these rules.
const std::string kCredential(32, 'k');

using server::MemberRole;
using server::Membership;
using server::MembershipConfig;
using testing::MaxRelativeDifference;

constexpr char kToken[] = "in-process-token";

// The controller's rules without its transport: members register, the test drops one as the
// heartbeat timeout would, and SetMode switches. Every change is pushed at once to the waiting
// sources and, as the watch stream's callback does, to every live trainer's Supersede().
class FakeController {
 public:
  FakeController(MembershipConfig config, TrainingOptions job)
      : membership_(std::move(config)), job_(std::move(job)) {}

  uint64_t Register(MemberRole role, const std::string& address) {
    uint64_t id;
    {
      absl::MutexLock lock(&mu_);
      auto registered = membership_.Register(kToken, role, address, clock_, kCredential);
      EXPECT_TRUE(registered.ok()) << registered.status();
      id = registered.value_or(0);
    }
    AssignShards();  // a registration may form generation 1
    return id;
  }

  // Where the shards' assignments go, as their watch streams deliver them: every new
  // generation's, when it forms. Unset: the test delivers them itself.
  void WatchShards(std::function<void(uint64_t generation)> assign) {
    absl::MutexLock lock(&mu_);
    assign_shards_ = std::move(assign);
  }

  void Watch(ElasticTrainer* trainer) {
    absl::MutexLock lock(&mu_);
    trainers_.push_back(trainer);
  }

  // The member went silent: every other member heartbeats, the clock passes the timeout, and
  // the membership re-forms without it.
  void Drop(uint64_t member, ElasticTrainer* trainer) {
    {
      absl::MutexLock lock(&mu_);
      trainers_.erase(std::remove(trainers_.begin(), trainers_.end(), trainer), trainers_.end());
      clock_ += absl::Seconds(11);  // past MembershipConfig::heartbeat_timeout (10 s)
      const server::Topology topology = membership_.topology();
      for (uint64_t other : topology.workers) {
        if (other == member) continue;
        EXPECT_TRUE(membership_.Heartbeat(other, topology.generation, clock_).ok());
      }
      for (uint64_t other : topology.shards) {
        EXPECT_TRUE(membership_.Heartbeat(other, topology.generation, clock_).ok());
      }
      const std::vector<uint64_t> dropped = membership_.Expire(clock_);
      EXPECT_EQ(dropped, std::vector<uint64_t>{member});
    }
    SupersedeAll();
  }

  // Switches the mode once any worker reports `steps` completed steps.
  void SwitchAt(int64_t steps, SyncMode mode) {
    absl::MutexLock lock(&mu_);
    switch_at_ = steps;
    switch_to_ = mode;
  }

  uint64_t generation() const {
    absl::MutexLock lock(&mu_);
    return membership_.topology().generation;
  }

  // One member's view, as its controller client gives it.
  class Source final : public AssignmentSource {
   public:
    Source(FakeController& controller, uint64_t member)
        : controller_(controller), member_(member) {}

    absl::StatusOr<GenerationAssignment> WaitForNewer(uint64_t after,
                                                      absl::Time deadline) override {
      absl::MutexLock lock(&controller_.mu_);
      auto newer = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(controller_.mu_) {
        const auto assignment = controller_.membership_.AssignmentOf(member_);
        return assignment.has_value() && assignment->generation > after;
      };
      if (!controller_.mu_.AwaitWithDeadline(absl::Condition(&newer), deadline)) {
        return absl::DeadlineExceededError(absl::StrCat("no generation after ", after));
      }
      const server::MemberAssignment assignment = *controller_.membership_.AssignmentOf(member_);
      GenerationAssignment out;
      out.generation = assignment.generation;
      out.mode = assignment.mode;
      out.rank = assignment.rank;
      out.world = static_cast<int>(assignment.ring.size());
      out.ring = assignment.ring;
      out.shards = assignment.shards;
      out.job = controller_.job_;
      return out;
    }

    void ReportCompletedSteps(uint64_t steps) override { controller_.Completed(steps); }
    // As the controller's Heartbeat with failed_generation (membership.h rule 9).
    absl::Status ReportFailedGeneration(uint64_t generation) override {
      return controller_.Failed(member_, generation);
    }

   private:
    FakeController& controller_;
    const uint64_t member_;
  };

 private:
  void Completed(uint64_t steps) {
    {
      absl::MutexLock lock(&mu_);
      if (switch_at_ < 0 || static_cast<int64_t>(steps) < switch_at_) return;
      switch_at_ = -1;
      EXPECT_TRUE(membership_.SetMode(switch_to_).ok());
    }
    SupersedeAll();
  }

  absl::Status Failed(uint64_t member, uint64_t generation) {
    absl::StatusOr<uint64_t> next;
    {
      absl::MutexLock lock(&mu_);
      next = membership_.ReportFailure(member, generation);
    }
    if (next.ok() && *next != 0) SupersedeAll();
    return next.status();
  }

  // As the watch stream's callback: outside the lock, a trainer may be waiting on it.
  void SupersedeAll() {
    std::vector<ElasticTrainer*> trainers;
    uint64_t generation;
    {
      absl::MutexLock lock(&mu_);
      trainers = trainers_;
      generation = membership_.topology().generation;
    }
    AssignShards();
    for (ElasticTrainer* trainer : trainers) trainer->Supersede(generation);
  }

  // The current generation to the shards, once; outside the lock, like SupersedeAll.
  void AssignShards() {
    std::function<void(uint64_t)> assign;
    uint64_t generation;
    {
      absl::MutexLock lock(&mu_);
      generation = membership_.topology().generation;
      if (!assign_shards_ || generation <= shards_assigned_) return;
      shards_assigned_ = generation;
      assign = assign_shards_;
    }
    assign(generation);
  }

  mutable absl::Mutex mu_;
  Membership membership_ ABSL_GUARDED_BY(mu_);
  const TrainingOptions job_;
  absl::Time clock_ ABSL_GUARDED_BY(mu_) = absl::UnixEpoch();
  std::vector<ElasticTrainer*> trainers_ ABSL_GUARDED_BY(mu_);
  int64_t switch_at_ ABSL_GUARDED_BY(mu_) = -1;
  SyncMode switch_to_ ABSL_GUARDED_BY(mu_) = SyncMode::kRing;
  std::function<void(uint64_t)> assign_shards_ ABSL_GUARDED_BY(mu_);
  uint64_t shards_assigned_ ABSL_GUARDED_BY(mu_) = 0;
};

// Parameter shards as gRPC services in this process, on loopback, assigned their jobs by the
// test (Assign; no shard is ever lost here, so the shard map stays the same).
class InProcessShards {
 public:
  InProcessShards(int count, const TrainingOptions& job) : job_(job) {
    const auto spec = ModelSpec::Parse(job.model, job.activation);
    EXPECT_TRUE(spec.ok()) << spec.status();
    ranges_ = EvenRanges(spec->parameter_count(), count);
    for (int shard = 0; shard < count; ++shard) {
      services_.push_back(std::make_unique<server::ParameterShardService>(/*segment_bytes=*/4096));
      auto server = StartServer("127.0.0.1:0", {services_.back().get()}, TransportSecurity());
      EXPECT_TRUE(server.ok()) << server.status();
      addresses_.push_back(absl::StrCat("127.0.0.1:", server->port));
      servers_.push_back(std::move(*server));
    }
  }
  const std::vector<std::string>& addresses() const { return addresses_; }
  server::ParameterShardService& service(int shard) { return *services_[shard]; }

  // What each shard's controller watch does with `generation`'s assignment.
  void Assign(uint64_t generation) {
    for (size_t shard = 0; shard < services_.size(); ++shard) {
      services_[shard]->SetJob(
          server::ShardJob{static_cast<int>(shard), ranges_[shard], job_.optimizer, generation});
    }
  }

 private:
  const TrainingOptions job_;
  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<server::ParameterShardService>> services_;
  std::vector<StartedServer> servers_;
  std::vector<std::string> addresses_;
};

struct FaultCase {
  std::string name;
  std::string point;  // where the victim is lost (FaultPlan)
  int64_t after_step = 0;
  int victim = 1;  // registration order of the worker lost
  SyncMode start = SyncMode::kRing;
  int shards = 1;
  int64_t switch_at = -1;  // switch to the other mode once a worker completed this many steps
  bool replay = true;      // ElasticOptions::replay_last_step
  // Ring mode: the last segments of step `left_behind_at`'s allreduce never reach the worker
  // registered last, which stays a step behind the others until the switch at `switch_at`
  // (left_behind_at + 1: once another worker completed that step) supersedes it. -1: none.
  int64_t left_behind_at = -1;
  // How many workers, the last registered, are left behind so: 2 leaves only the first ahead.
  int left_behind_members = 1;
  // Ring mode: every segment of step `refused_at`'s allreduce in generation 1 to the worker
  // registered last is refused (never reaches its inbox), so the step's collective times out
  // (`timeout`) on every member and nothing supersedes it but the members' own reports. -1: none.
  int64_t refused_at = -1;
  // With refused_at: the census of the regroup that follows (generation 2's) never reaches that
  // worker either, so the regroup times out on every member with none lost.
  bool census_refused = false;
  // Ps mode: shard 0 refuses the push of step `ps_refused_at` from rank 1, once (as it refuses a
  // duplicate or non-finite share), so that worker's step fails at once and the others' waits
  // for a sum that cannot come. -1: none.
  int64_t ps_refused_at = -1;
  absl::Duration timeout = absl::Seconds(60);  // ElasticOptions::timeout
};

// Within a generation (worker/elastic_training.cc): the ps load's barrier, and the first step.
constexpr uint64_t kLoadBarrierCollective = (uint64_t{1} << 24) - 1;
constexpr uint64_t kStepCollectives = uint64_t{1} << 24;

// The collective a ring step's allreduce travels as in generation 1, unbucketed
// (worker/elastic_training.cc: generation << 32, then 2^24 + 2t; ring/allreduce.h: shifted left
// by 12 bits for its pieces).
uint64_t FirstGenerationStepCollective(int64_t step) {
  return ((uint64_t{1} << 32) + (uint64_t{1} << 24) + 2 * static_cast<uint64_t>(step)) << 12;
}

void PrintTo(const FaultCase& fault, std::ostream* out) { *out << fault.name; }

TrainingOptions SmallJob(int64_t steps) {
  TrainingOptions job;
  job.model = "16,64,4";
  job.data = "synthetic:512";
  job.batch_size = 32;
  job.steps = steps;
  return job;
}

// One worker: its ring member, metrics, trainer and what it ended with.
struct TrainerThread {
  uint64_t member = 0;
  std::string address;
  std::unique_ptr<AssignmentSource> source;
  std::unique_ptr<Metrics> metrics;
  std::ostringstream log;
  std::unique_ptr<ElasticTrainer> trainer;
  absl::Status status;
  std::optional<ElasticResult> result;
};

// Each survivor at the end of RunJobWithFault: its registration index and its thread.
using SurvivorCheck = std::function<void(int index, const TrainerThread& worker)>;
// Every ring segment RunJobWithFault's network carries (from the senders' threads).
using SegmentObserver = std::function<void(const ring::SegmentHeader& header)>;

// A ring segment's collective within its generation (worker/elastic_training.cc numbers them
// from generation << 32; ring/allreduce.h shifts them left by 12 bits for their pieces).
uint64_t CollectiveInGeneration(const ring::SegmentHeader& header) {
  return (header.collective >> 12) - (header.generation << 32);
}

// Runs a 3-worker job losing `fault.victim` at `fault.point` (victim -1: nobody), and checks the
// survivors: they agree bit for bit, and with the float32 single-process reference within
// `tolerance`; then `check` (may be null) sees each.
void RunJobWithFault(const FaultCase& fault, const TrainingOptions& job, double tolerance = 1e-5,
                     const SurvivorCheck& check = nullptr,
                     const SegmentObserver& observe = nullptr) {
  SCOPED_TRACE(absl::StrCat(fault.name, ": worker ", fault.victim, " lost at ", fault.point, "@",
                            fault.after_step, ", starting in ", SyncModeName(fault.start),
                            " mode, ", fault.shards, " shard(s), switch at step ",
                            fault.switch_at));
  constexpr int kWorkers = 3;
  MembershipConfig config;
  config.workers = kWorkers;
  config.ps_shards = fault.shards;
  config.join_token = kToken;
  config.heartbeat_timeout = absl::Seconds(10);
  config.mode = fault.start;
  FakeController controller(config, job);
  if (fault.switch_at >= 0) {
    controller.SwitchAt(fault.switch_at,
                        fault.start == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing);
  }
  ring::InMemoryRingNetwork network;
  if (fault.refused_at >= 0) {
    const uint64_t collective = FirstGenerationStepCollective(fault.refused_at);
    const std::string last = absl::StrCat("in-memory:", kWorkers);
    const bool census = fault.census_refused;
    network.LoseSegments(
        [collective, last, census](const std::string& to, const ring::SegmentHeader& h) {
          if (to != last) return false;
          if (census && h.generation == 2) return CollectiveInGeneration(h) == kCensusCollective;
          return h.generation == 1 && h.collective == collective;
        });
  } else if (fault.left_behind_at >= 0 || observe) {
    std::set<std::string> behind;
    for (int i = kWorkers - fault.left_behind_members; i < kWorkers; ++i) {
      behind.insert(absl::StrCat("in-memory:", i + 1));
    }
    const uint64_t collective = fault.left_behind_at >= 0
                                    ? FirstGenerationStepCollective(fault.left_behind_at)
                                    : ~uint64_t{0};
    network.LoseSegments(
        [behind, collective, observe](const std::string& to, const ring::SegmentHeader& h) {
          if (observe) observe(h);
          // The allgather's last step: the others have all they need from those behind by then.
          return behind.count(to) > 0 && h.generation == 1 && h.collective == collective &&
                 h.step == 2 * kWorkers - 3;
        });
  }
  InProcessShards shards(fault.shards, job);
  controller.WatchShards([&shards](uint64_t generation) { shards.Assign(generation); });
  if (fault.ps_refused_at >= 0) {
    auto refused = std::make_shared<std::atomic<bool>>(false);
    server::PsTestHooks::SetPushRefusalHook(
        shards.service(0), [refused, at = static_cast<uint64_t>(fault.ps_refused_at)](
                               uint64_t, int worker, uint64_t step) {
          if (worker != 1 || step != at || refused->exchange(true)) return absl::OkStatus();
          return absl::InvalidArgumentError(
              absl::StrCat("worker 1's share of step ", step, " refused by the test"));
        });
  }

  std::vector<std::unique_ptr<TrainerThread>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    auto worker = std::make_unique<TrainerThread>();
    worker->address = absl::StrCat("in-memory:", i + 1);  // host:port, as registration checks
    worker->member = controller.Register(MemberRole::kWorker, worker->address);
    worker->source = std::make_unique<FakeController::Source>(controller, worker->member);
    worker->metrics = std::make_unique<Metrics>(std::make_shared<prometheus::Registry>());
    ElasticOptions options;
    options.segment_bytes = 4096;
    options.timeout = fault.timeout;  // 60 s: a deadline only for bugs, every failure superseded
    options.regroup_timeout = absl::Seconds(60);
    options.state_chunk_floats = 257;  // a regroup's state in many chunks, across every boundary
    options.replay_last_step = fault.replay;
    if (i == fault.victim) options.fault = LoseAt(FaultPlan{fault.point, fault.after_step});
    worker->trainer = std::make_unique<ElasticTrainer>(
        *worker->source, &network.Join(worker->address), *worker->metrics, options, worker->log);
    controller.Watch(worker->trainer.get());
    workers.push_back(std::move(worker));
  }
  for (const std::string& address : shards.addresses()) {
    controller.Register(MemberRole::kShard, address);
  }
  ASSERT_EQ(controller.generation(), 1u);

  const int lost = fault.victim >= 0 ? 1 : 0;
  absl::Notification stop;
  absl::Mutex mu;
  int finished = 0;    // survivors' finished callbacks
  int unexpected = 0;  // trainers that returned before `stop` without being lost
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, worker = worker.get()] {
      worker->status = worker->trainer->Run(stop, [&](const ElasticResult& result) {
        worker->result = result;
        absl::MutexLock lock(&mu);
        ++finished;
        return absl::OkStatus();
      });
      if (worker->status.code() == absl::StatusCode::kAborted) {
        // Lost: its links break and the controller stops hearing from it.
        network.Kill(worker->address);
        controller.Drop(worker->member, worker->trainer.get());
      } else if (!stop.HasBeenNotified()) {
        absl::MutexLock lock(&mu);
        ++unexpected;
      }
    });
  }
  bool ended;
  {
    absl::MutexLock lock(&mu);
    auto survivors_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return finished >= kWorkers - lost || unexpected > 0;
    };
    // Not a timing condition: the end is an event; the limit only turns a hang into a report.
    ended = mu.AwaitWithTimeout(absl::Condition(&survivors_done), absl::Minutes(5));
  }
  EXPECT_TRUE(ended) << "the survivors did not finish: the job stalled";
  stop.Notify();
  for (std::thread& thread : threads) thread.join();

  auto reference = TrainLocally(job);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int i = 0; i < kWorkers; ++i) {
    TrainerThread& worker = *workers[i];
    SCOPED_TRACE(absl::StrCat("worker ", i, "'s log:\n", worker.log.str()));
    if (i == fault.victim) {
      EXPECT_EQ(worker.status.code(), absl::StatusCode::kAborted)
          << "the victim was never lost at " << fault.point << ": " << worker.status;
      EXPECT_FALSE(worker.result.has_value());
      continue;
    }
    EXPECT_TRUE(worker.status.ok()) << worker.status;
    ASSERT_TRUE(worker.result.has_value());
    EXPECT_EQ(worker.result->training.steps, job.steps);
    EXPECT_EQ(worker.result->slot.world, kWorkers - lost);
    EXPECT_GE(worker.result->generation, 1u + lost);
    EXPECT_LT(MaxRelativeDifference(worker.result->training.parameters, reference->parameters),
              tolerance);
    if (job.wire_dtype != WireDtype::kFp32) {
      // The sampled error was measured in the mode the job ended in (after any switch and
      // regroup, so the dtype went with them), and is small.
      const SyncMode last = fault.switch_at < 0              ? fault.start
                            : fault.start == SyncMode::kRing ? SyncMode::kPs
                                                             : SyncMode::kRing;
      EXPECT_GT(worker.metrics->WireErrorSamples(last).Value(), 0) << SyncModeName(last);
      for (SyncMode mode : {SyncMode::kRing, SyncMode::kPs}) {
        EXPECT_LT(worker.metrics->WireRelativeError(mode).Value(), 1e-2) << SyncModeName(mode);
      }
    }
  }
  const int a = fault.victim == 0 ? 1 : 0, b = fault.victim == 2 ? 1 : 2;
  ASSERT_TRUE(workers[a]->result.has_value() && workers[b]->result.has_value());
  EXPECT_EQ(workers[a]->result->training.parameters, workers[b]->result->training.parameters)
      << "the survivors' parameters differ";
  for (int i = 0; i < kWorkers && check; ++i) {
    if (i != fault.victim) check(i, *workers[i]);
  }
}

// Issue 51: a refused message (here every segment of one step's allreduce to one worker) used to
// stop the job until an operator forced a new generation. Now the step's collective times out
// (its deadline, logged when it fires), the members report the failed generation, the
// controller forms a new one of the same members at once, and the job goes on to the reference.
TEST(ElasticTrainerHealTest, ARefusedRingSegmentEndsInANewGenerationWithoutAnOperator) {
  FaultCase fault;
  fault.name = "refused_segment";
  fault.victim = -1;  // nobody is lost
  fault.refused_at = 3;
  fault.timeout = absl::Seconds(3);
  // The first member whose deadline fires reports; the others' collectives are then superseded.
  int timed_out = 0, asked = 0;
  RunJobWithFault(fault, SmallJob(8), 1e-5, [&](int, const TrainerThread& worker) {
    EXPECT_GE(worker.result->generation, 2u) << "the failed generation was replaced";
    EXPECT_EQ(worker.result->slot.world, 3) << "by one of the same members";
    const std::string log = worker.log.str();
    if (log.find("generation 1's collective timed out at step 3 (--timeout=3s)") !=
        std::string::npos) {
      ++timed_out;
    }
    if (log.find("asked the controller for a new generation") != std::string::npos) ++asked;
  });
  EXPECT_GE(timed_out, 1);
  EXPECT_GE(asked, 1);
}

// A regroup whose census never completes, every member alive (a link that never connected, as
// once in container_kube): its deadline fires, the members report the generation, and the
// controller forms another of the same members, instead of each waiting --regroup_timeout for a
// generation nobody asks for and then exiting.
TEST(ElasticTrainerHealTest, ARegroupThatTimesOutEndsInANewGenerationWithoutAnOperator) {
  FaultCase fault;
  fault.name = "refused_census";
  fault.victim = -1;  // nobody is lost
  fault.refused_at = 3;
  fault.census_refused = true;
  fault.timeout = absl::Seconds(3);
  int asked = 0;
  RunJobWithFault(fault, SmallJob(8), 1e-5, [&](int, const TrainerThread& worker) {
    EXPECT_GE(worker.result->generation, 3u) << "the regroup's generation was replaced";
    EXPECT_EQ(worker.result->slot.world, 3) << "by one of the same members";
    const std::string log = worker.log.str();
    if (log.find("generation 2 failed at step 3") != std::string::npos &&
        log.find("asked the controller for a new generation") != std::string::npos) {
      ++asked;
    }
  });
  EXPECT_GE(asked, 1) << "a member whose census timed out reports generation 2";
}

// ... and in ps mode: a push the shard refuses fails that worker's step at once, it reports the
// generation as failed, and the others, waiting for a sum that cannot come, are superseded by the
// new generation of the same members well before their own deadline.
TEST(ElasticTrainerHealTest, ARefusedPsPushEndsInANewGenerationWithoutAnOperator) {
  FaultCase fault;
  fault.name = "refused_push";
  fault.victim = -1;  // nobody is lost
  fault.start = SyncMode::kPs;
  fault.ps_refused_at = 3;
  int asked = 0;
  RunJobWithFault(fault, SmallJob(8), 1e-5, [&](int, const TrainerThread& worker) {
    EXPECT_GE(worker.result->generation, 2u) << "the failed generation was replaced";
    EXPECT_EQ(worker.result->slot.world, 3) << "by one of the same members";
    const std::string log = worker.log.str();
    if (log.find("refused by the test") != std::string::npos &&
        log.find("asked the controller for a new generation") != std::string::npos) {
      ++asked;
    }
  });
  EXPECT_EQ(asked, 1) << "the refused worker reports the failed generation";
}

// Issue 23: a one-worker ps job whose rank 0 Loads the shard before the shard has its
// assignment of the generation. Their watch streams deliver in no set order, and with one worker
// the census and the state hand-over take no time, so this happened on a loaded machine. The
// shard refused the Load, the regroup failed, and no new generation ever came to cure it: the
// worker sat at step 0 for its whole --regroup_timeout, then exited 1. Here the shard's
// assignment is delivered only once the shard says the Load waits for it.
TEST(ElasticTrainerOrderTest, ALoadThatOutrunsTheShardsAssignmentStillTrains) {
  const TrainingOptions job = SmallJob(6);
  MembershipConfig config;
  config.workers = 1;
  config.ps_shards = 1;
  config.join_token = kToken;
  config.heartbeat_timeout = absl::Seconds(10);
  config.mode = SyncMode::kPs;
  FakeController controller(config, job);  // no WatchShards: the hook below assigns
  ring::InMemoryRingNetwork network;
  InProcessShards shards(1, job);
  absl::Mutex mu;
  std::optional<uint64_t> waited_for;  // the generation the shard's Load waited for
  bool returned = false;               // Run ended (it must not before `stop`)
  std::optional<ElasticResult> result;
  server::PsTestHooks::SetLoadWaitHook(shards.service(0), [&](uint64_t generation) {
    absl::MutexLock lock(&mu);
    waited_for = generation;
  });
  // The shard's watch stream, late: it delivers the assignment once the Load waits for it.
  std::thread shard_watch([&] {
    uint64_t generation;
    {
      absl::MutexLock lock(&mu);
      auto due = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return waited_for || returned; };
      mu.Await(absl::Condition(&due));
      if (!waited_for) return;
      generation = *waited_for;
    }
    shards.Assign(generation);
  });

  TrainerThread worker;
  worker.address = "in-memory:1";
  worker.member = controller.Register(MemberRole::kWorker, worker.address);
  worker.source = std::make_unique<FakeController::Source>(controller, worker.member);
  worker.metrics = std::make_unique<Metrics>(std::make_shared<prometheus::Registry>());
  ElasticOptions options;
  options.segment_bytes = 4096;
  // Short, so that a refused Load ends the worker soon instead of stalling the test; the fixed
  // path never waits for a generation.
  options.regroup_timeout = absl::Seconds(2);
  worker.trainer = std::make_unique<ElasticTrainer>(*worker.source, &network.Join(worker.address),
                                                    *worker.metrics, options, worker.log);
  controller.Watch(worker.trainer.get());
  controller.Register(MemberRole::kShard, shards.addresses()[0]);
  ASSERT_EQ(controller.generation(), 1u);

  absl::Notification stop;
  std::thread training([&] {
    worker.status = worker.trainer->Run(stop, [&](const ElasticResult& done) {
      absl::MutexLock lock(&mu);
      result = done;
      return absl::OkStatus();
    });
    absl::MutexLock lock(&mu);
    returned = true;
  });
  {
    absl::MutexLock lock(&mu);
    auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return result || returned; };
    mu.Await(absl::Condition(&ended));
  }
  stop.Notify();
  training.join();
  shard_watch.join();

  SCOPED_TRACE(absl::StrCat("the worker's log:\n", worker.log.str()));
  EXPECT_EQ(waited_for, std::optional<uint64_t>(1)) << "the Load did not wait for generation 1";
  EXPECT_TRUE(worker.status.ok()) << worker.status;
  ASSERT_TRUE(result.has_value()) << "the worker never finished its job";
  EXPECT_EQ(result->training.steps, job.steps);
  auto reference = TrainLocally(job);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_LT(MaxRelativeDifference(result->training.parameters, reference->parameters), 1e-5);
}

class ElasticTrainerFaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ElasticTrainerFaultTest, SurvivorsFinishWithTheReferenceParameters) {
  RunJobWithFault(GetParam(), SmallJob(24));
}

INSTANTIATE_TEST_SUITE_P(
    EveryProtocolPoint, ElasticTrainerFaultTest,
    ::testing::Values(
        FaultCase{"BeforeTheFirstRegroup", "assigned", 0, 1, SyncMode::kRing, 1, -1},
        FaultCase{"FirstRankBeforeTheFirstRegroup", "assigned", 0, 0, SyncMode::kPs, 2, -1},
        FaultCase{"DuringTheCensus", "census", 0, 2, SyncMode::kRing, 1, -1},
        FaultCase{"DuringTheStateHandOver", "state", 0, 1, SyncMode::kRing, 1, -1},
        // Workers are at most one step apart: when one completes 3, the victim has completed 2.
        // (Without the replay, which a member one step behind would take instead.)
        FaultCase{"DuringALaterStateHandOver", "state", 2, 0, SyncMode::kPs, 2, 3, false},
        // Lost with part of the state sent: the source (rank 0, level with rank 1), or the
        // member receiving it, left a step behind at the switch (its last segments of step 2
        // lost) with the replay turned off. Whoever held the state before still holds it.
        FaultCase{"TheSourceMidwayThroughTheState", "state_chunk", 2, 0, SyncMode::kRing, 2, 3,
                  false, 2},
        FaultCase{"AMemberMidwayThroughTheState", "state_chunk", 2, 2, SyncMode::kRing, 2, 3, false,
                  2},
        // The same with the member behind still at step 0: it adopts the state in place.
        FaultCase{"AMemberMidwayThroughTheStateInPlace", "state_chunk", 0, 2, SyncMode::kRing, 2, 1,
                  false, 0},
        // A member left a step behind at a switch (its last segments of step 4 lost): lost
        // before the replay, the source (its sum gone with it) or the member behind. The
        // survivors' next regroup finds the state whole where it was.
        FaultCase{"TheSourceBeforeTheReplay", "replay", 4, 0, SyncMode::kRing, 2, 5, true, 4},
        FaultCase{"TheMemberBehindBeforeTheReplay", "replay", 4, 2, SyncMode::kRing, 2, 5, true, 4},
        FaultCase{"TheLoaderBeforeTheShardLoad", "load", 0, 0, SyncMode::kPs, 2, -1},
        FaultCase{"AtTheLoadBarrier", "barrier", 0, 2, SyncMode::kPs, 2, -1},
        FaultCase{"MidRingStep", "ring_step", 7, 1, SyncMode::kRing, 1, -1},
        FaultCase{"LastRankMidRingStep", "ring_step", 7, 2, SyncMode::kRing, 1, -1},
        FaultCase{"DuringASwitchToPs", "switch", 0, 2, SyncMode::kRing, 2, 5},
        FaultCase{"DuringASwitchToRing", "switch", 0, 1, SyncMode::kPs, 2, 5},
        FaultCase{"AtTheBarrierAfterASwitch", "barrier", 5, 1, SyncMode::kRing, 3, 5},
        FaultCase{"MidPsStepBetweenShards", "ps_push", 7, 1, SyncMode::kPs, 2, -1},
        FaultCase{"FirstRankMidPsStepBetweenShards", "ps_push", 3, 0, SyncMode::kPs, 3, -1},
        FaultCase{"AfterASwitchMidPsStep", "ps_push", 8, 2, SyncMode::kRing, 2, 5}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

// A switch supersedes a step that one or two of the three members had completed (whoever
// reported it first fired the switch; the other may still have been reading its last
// segments): the third, its last segments of step 4 lost, is certainly a step behind. The
// regroup replays step 4 on the members behind from the sum the most advanced member still
// holds, instead of sending them the whole state, and every member ends with the
// single-process reference's parameters, bit for bit alike.
TEST(ElasticTrainerReplayTest, AMemberAStepBehindReplaysTheLastStepFromItsSum) {
  FaultCase left_behind{"ALaggardAtASwitch", "", 0, -1, SyncMode::kRing, 2, 5, true, 4};
  int sources = 0;
  absl::Mutex mu;
  std::set<uint64_t> second_regroup;  // collectives of generation 2 below its steps'
  RunJobWithFault(
      left_behind, SmallJob(12), 1e-5,
      [&](int index, const TrainerThread& worker) {
        const std::string log = worker.log.str();
        const bool replayed = log.find("replayed step 4 from worker-") != std::string::npos;
        if (index == 2) {
          // The switch cut its step short; it says so as a switch, not as a failure.
          EXPECT_NE(log.find("switching to ps at step 4 (generation 2)"), std::string::npos) << log;
          EXPECT_EQ(log.find("failed"), std::string::npos) << log;
          EXPECT_TRUE(replayed) << log;
        }
        if (!replayed) ++sources;
      },
      [&](const ring::SegmentHeader& h) {
        if (h.generation != 2 || CollectiveInGeneration(h) >= kStepCollectives) return;
        absl::MutexLock lock(&mu);
        second_regroup.insert(CollectiveInGeneration(h));
      });
  EXPECT_GE(sources, 1) << "someone completed step 4 and sent its sum";
  // The census, the replayed sum and its check, the ps load's barrier; no state: the replay
  // left every member level.
  EXPECT_EQ(second_regroup, (std::set<uint64_t>{1, 2, 3, kLoadBarrierCollective}));
}

// A member still at step 0 adopts the state in place, chunk by chunk, with no room beside its
// own. Here only the first worker completes step 0 (the others lose that step's last segments)
// and is lost midway through handing the state over at the switch: the two others, each
// holding the first chunk of step 1's state over the initial one, take the seeded initial
// state again. Their next regroup finds them level at step 0, and they train from there to the
// reference's parameters; torn states, level with each other, would have trained on to others.
TEST(ElasticTrainerRegroupTest, MembersAtStepZeroLosingTheSourceMidwayTakeTheInitialStateAgain) {
  FaultCase source_lost{"TheSourceMidwayThroughAnInPlaceAdoption",
                        "state_chunk",
                        1,
                        0,
                        SyncMode::kRing,
                        2,
                        1,
                        false,
                        0,
                        2};
  RunJobWithFault(source_lost, SmallJob(8), 1e-5, [&](int index, const TrainerThread& worker) {
    const std::string log = worker.log.str();
    EXPECT_NE(log.find("back to the initial state"), std::string::npos) << log;
  });
}

// An elastic job's first generation finds every member at step 0 with the same seeded
// parameters: its regroup takes the census and hands no state over (3K floats with Adam).
TEST(ElasticTrainerRegroupTest, ALevelRegroupTakesTheCensusAndSendsNoState) {
  FaultCase none{"NoLoss", "", 0, -1, SyncMode::kRing, 1, -1};
  absl::Mutex mu;
  std::set<uint64_t> first_regroup;  // collectives of generation 1 below its steps'
  RunJobWithFault(none, SmallJob(4), 1e-5, nullptr, [&](const ring::SegmentHeader& h) {
    if (h.generation != 1 || CollectiveInGeneration(h) >= kStepCollectives) return;
    absl::MutexLock lock(&mu);
    first_regroup.insert(CollectiveInGeneration(h));
  });
  EXPECT_EQ(first_regroup, (std::set<uint64_t>{1})) << "only the census";
}

// --wire_dtype survives regroups and mode switches: 16-bit gradients through a lost worker mid
// ring step, a switch to ps and back, and a worker lost mid ps step after a switch. The job spec
// carries the dtype to every generation; the survivors end bit-identical to each other and
// close to the float32 reference (the wire rounds every step's gradient).
class ElasticTrainerWireDtypeTest
    : public ::testing::TestWithParam<std::tuple<WireDtype, FaultCase>> {};

TEST_P(ElasticTrainerWireDtypeTest, SurvivorsAgreeAndStayCloseToTheFp32Reference) {
  TrainingOptions job = SmallJob(24);
  job.wire_dtype = std::get<0>(GetParam());
  RunJobWithFault(std::get<1>(GetParam()), job, /*tolerance=*/5e-2);
}

INSTANTIATE_TEST_SUITE_P(
    RegroupsAndSwitches, ElasticTrainerWireDtypeTest,
    ::testing::Combine(
        ::testing::Values(WireDtype::kFp16, WireDtype::kBf16),
        ::testing::Values(FaultCase{"MidRingStep", "ring_step", 7, 1, SyncMode::kRing, 1, -1},
                          FaultCase{"DuringASwitchToRing", "switch", 0, 1, SyncMode::kPs, 2, 5},
                          FaultCase{"AfterASwitchMidPsStep", "ps_push", 8, 2, SyncMode::kRing, 2,
                                    5})),
    [](const auto& info) {
      return std::string(WireDtypeName(std::get<0>(info.param))) + "_" +
             std::get<1>(info.param).name;
    });

// --compression through a lost worker, and with nobody lost: in the ring randomk and powersgd
// (ring/compressed_sum.h, powersgd_sum.h) lost mid ring step, in ps mode topk and sign
// (server/ps/ps_client.h, shard_state.h) lost mid ps step between two shards. Every generation
// starts with zero residuals on the workers and the shards, and PowerSGD with its Q drawn afresh
// (the documented reset: a new ring sum, client and shard state); the job spec carries the kind
// and the warm-up to every generation, and the survivors end bit-identical. Compressed steps
// follow another path than the uncompressed reference, so it is a loose bound here: that they
// trained the same job, not that they match.
class ElasticTrainerCompressionTest
    : public ::testing::TestWithParam<std::tuple<std::string, FaultCase>> {};

TEST_P(ElasticTrainerCompressionTest, SurvivorsAgreeBitForBit) {
  TrainingOptions job = SmallJob(24);
  job.compression = ParseCompression(std::get<0>(GetParam())).value();
  job.compression_warmup = 3;
  auto reference = TrainLocally(job);
  ASSERT_TRUE(reference.ok()) << reference.status();
  RunJobWithFault(
      std::get<1>(GetParam()), job, /*tolerance=*/0.5, [&](int, const TrainerThread& worker) {
        // Compressed it was: an uncompressed run ends within 1e-5 of the reference.
        EXPECT_GT(MaxRelativeDifference(worker.result->training.parameters, reference->parameters),
                  1e-3);
      });
}

std::string CompressionCaseName(
    const ::testing::TestParamInfo<std::tuple<std::string, FaultCase>>& info) {
  const std::string& kind = std::get<0>(info.param);
  return kind.substr(0, kind.find(':')) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(
    RingKinds, ElasticTrainerCompressionTest,
    ::testing::Combine(::testing::Values(std::string("randomk:0.5"), std::string("powersgd:1")),
                       ::testing::Values(FaultCase{"MidRingStep", "ring_step", 7, 1,
                                                   SyncMode::kRing, 1, -1},
                                         FaultCase{"NoLoss", "", 0, -1, SyncMode::kRing, 1, -1})),
    CompressionCaseName);

INSTANTIATE_TEST_SUITE_P(
    PsKinds, ElasticTrainerCompressionTest,
    ::testing::Combine(::testing::Values(std::string("topk:0.1"), std::string("sign")),
                       ::testing::Values(FaultCase{"MidPsStepBetweenShards", "ps_push", 7, 1,
                                                   SyncMode::kPs, 2, -1},
                                         FaultCase{"NoLoss", "", 0, -1, SyncMode::kPs, 2, -1})),
    CompressionCaseName);

// --bucket_bytes: every step overlapped with the backward pass, a bucket per layer of odd
// sizes (518, 418 and 48 elements), through a worker lost between two buckets of a ring step
// (the survivors' second bucket is superseded mid-step), before a bucketed step's compute, mid ps
// step between shards (the last shard's pushes begun first), and a mode switch each way that
// supersedes the others mid-step. The survivors agree bit for bit and stay within the ring's
// float32 tolerance of the single-process reference; with fp16 and bf16 within the wire's.
class ElasticTrainerBucketTest : public ::testing::TestWithParam<std::tuple<WireDtype, FaultCase>> {
};

TEST_P(ElasticTrainerBucketTest, RegroupsAndSwitchesMidBucketedStep) {
  TrainingOptions job = SmallJob(24);
  job.model = "13,37,11,4";
  job.bucket_bytes = 1;  // a bucket per layer
  job.wire_dtype = std::get<0>(GetParam());
  RunJobWithFault(std::get<1>(GetParam()), job, job.wire_dtype == WireDtype::kFp32 ? 1e-5 : 5e-2);
}

INSTANTIATE_TEST_SUITE_P(
    BucketedSteps, ElasticTrainerBucketTest,
    ::testing::Combine(
        ::testing::Values(WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16),
        ::testing::Values(
            FaultCase{"BetweenRingBuckets", "ring_bucket", 7, 1, SyncMode::kRing, 1, -1},
            FaultCase{"BeforeABucketedRingStep", "ring_step", 7, 2, SyncMode::kRing, 1, -1},
            FaultCase{"SwitchToPsMidStep", "switch", 0, 2, SyncMode::kRing, 3, 5},
            FaultCase{"SwitchToRingMidStep", "switch", 0, 1, SyncMode::kPs, 2, 5},
            FaultCase{"MidPsStepBetweenShards", "ps_push", 7, 1, SyncMode::kPs, 3, -1},
            FaultCase{"BetweenRingBucketsThenSwitch", "ring_bucket", 3, 0, SyncMode::kRing, 2, 5})),
    [](const auto& info) {
      return std::string(WireDtypeName(std::get<0>(info.param))) + "_" +
             std::get<1>(info.param).name;
    });

// Overlapped training equals the non-overlapped run: three trainers, nobody lost, a bucket per
// layer of odd sizes against one sync after the backward pass. In ps mode (two shards) the final
// parameters are the very bits; in ring mode each bucket is its own allreduce, which adds in
// another order, so within the ring's tolerance (fp32) or the wire's (16-bit). Every ps link
// carries exactly the cost model's bytes (common/cost_model.h).
class ElasticTrainerOverlapParityTest
    : public ::testing::TestWithParam<std::tuple<SyncMode, WireDtype>> {};

TEST_P(ElasticTrainerOverlapParityTest, OverlappedEqualsNonOverlapped) {
  const auto [mode, wire] = GetParam();
  TrainingOptions job = SmallJob(12);
  job.model = "13,37,11,4";
  job.wire_dtype = wire;
  const double tolerance = wire == WireDtype::kFp32 ? 1e-5 : 5e-2;
  const FaultCase none{"Nobody", "none", 0, /*victim=*/-1, mode, /*shards=*/2, -1};
  std::vector<float> plain, overlapped;
  RunJobWithFault(none, job, tolerance, [&](int index, const TrainerThread& worker) {
    if (index == 0) plain = worker.result->training.parameters;
  });
  job.bucket_bytes = 1;  // a bucket per layer: 48, 418 and 518 elements
  const auto spec = ModelSpec::Parse(job.model, job.activation);
  ASSERT_TRUE(spec.ok());
  std::vector<uint64_t> buckets;
  for (const GradientBucket& bucket : PlanBuckets(*spec, job.bucket_bytes)) {
    buckets.push_back(bucket.range.size());
  }
  ASSERT_EQ(buckets, (std::vector<uint64_t>{48, 418, 518}));
  const double steps = static_cast<double>(job.steps), width = WireBytesPerElement(wire);
  RunJobWithFault(none, job, tolerance, [&](int index, const TrainerThread& worker) {
    if (index == 0) overlapped = worker.result->training.parameters;
    const std::string me = WorkerName(index);
    // The in-memory ring counts nothing: its buckets' bytes are checked in
    // tests/ring/wire_dtype_allreduce_test.cc.
    if (mode == SyncMode::kRing) return;
    const std::vector<ElementRange> ranges = EvenRanges(spec->parameter_count(), 2);
    for (int s = 0; s < 2; ++s) {
      const LinkSendMetrics up = worker.metrics->LinkSend(me, PsShardName(s), SyncMode::kPs);
      EXPECT_EQ(up.bytes->Value(), steps * static_cast<double>(ranges[s].size()) * width) << me;
      EXPECT_EQ(up.bytes->Value(), up.expected_bytes->Value()) << me;
    }
  });
  ASSERT_EQ(plain.size(), overlapped.size());
  if (mode == SyncMode::kPs) {
    EXPECT_EQ(std::memcmp(plain.data(), overlapped.data(), plain.size() * sizeof(float)), 0)
        << "ps mode: the overlapped run's parameters are not the same bits";
  } else {
    EXPECT_LT(MaxRelativeDifference(overlapped, plain), tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(BothModes, ElasticTrainerOverlapParityTest,
                         ::testing::Combine(::testing::Values(SyncMode::kRing, SyncMode::kPs),
                                            ::testing::Values(WireDtype::kFp32, WireDtype::kFp16,
                                                              WireDtype::kBf16)),
                         [](const auto& info) {
                           return std::string(SyncModeName(std::get<0>(info.param))) + "_" +
                                  std::string(WireDtypeName(std::get<1>(info.param)));
                         });

// Rank 0, and only rank 0, evaluates the job on the held-out test set every eval_every steps (or
// the first step after, when its evaluator was busy) and after the last: in ring mode its own
// snapshot at a step boundary, in ps mode the shards' parameters (read with GetParameters while
// the job goes on). The last point is the final
// parameters' test accuracy, as the result reports it.
class ElasticTrainerEvaluationTest : public ::testing::TestWithParam<SyncMode> {};

TEST_P(ElasticTrainerEvaluationTest, RankZeroEvaluatesEveryFewStepsAndAfterTheLast) {
  const SyncMode mode = GetParam();
  auto dir = launch::TempDir::Create("ringside-elastic-eval-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(ringside::testing::WriteTinyFashionMnist(dir->path(), 64, 40));
  TrainingOptions job;
  job.model = "20,16,10";
  job.data = "fashion-mnist:" + dir->path();
  job.batch_size = 16;
  job.steps = 10;
  job.eval_every = 4;
  constexpr int kWorkers = 2;
  MembershipConfig config;
  config.workers = kWorkers;
  config.ps_shards = 2;
  config.join_token = kToken;
  config.heartbeat_timeout = absl::Seconds(10);
  config.mode = mode;
  FakeController controller(config, job);
  ring::InMemoryRingNetwork network;
  InProcessShards shards(2, job);
  controller.WatchShards([&shards](uint64_t generation) { shards.Assign(generation); });
  absl::Mutex mu;
  std::vector<std::vector<EvaluationLine>> points(kWorkers);
  std::vector<std::unique_ptr<TrainerThread>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    auto worker = std::make_unique<TrainerThread>();
    worker->address = absl::StrCat("in-memory:", i + 1);
    worker->member = controller.Register(MemberRole::kWorker, worker->address);
    worker->source = std::make_unique<FakeController::Source>(controller, worker->member);
    worker->metrics = std::make_unique<Metrics>(std::make_shared<prometheus::Registry>());
    ElasticOptions options;
    options.segment_bytes = 4096;
    options.evaluations = [&mu, &points, i](const EvaluationLine& point) {
      absl::MutexLock lock(&mu);
      points[i].push_back(point);
    };
    worker->trainer = std::make_unique<ElasticTrainer>(
        *worker->source, &network.Join(worker->address), *worker->metrics, options, worker->log);
    controller.Watch(worker->trainer.get());
    workers.push_back(std::move(worker));
  }
  for (const std::string& address : shards.addresses()) {
    controller.Register(MemberRole::kShard, address);
  }
  absl::Notification stop;
  int finished = 0;
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, worker = worker.get()] {
      worker->status = worker->trainer->Run(stop, [&](const ElasticResult& result) {
        worker->result = result;
        absl::MutexLock lock(&mu);
        ++finished;
        return absl::OkStatus();
      });
    });
  }
  {
    absl::MutexLock lock(&mu);
    auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return finished == kWorkers; };
    // An event, not a timing: the limit only turns a hang into a report.
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Minutes(5)));
  }
  stop.Notify();
  for (std::thread& thread : threads) thread.join();

  absl::MutexLock lock(&mu);
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_TRUE(workers[i]->result.has_value()) << workers[i]->log.str();
    SCOPED_TRACE(absl::StrCat("worker ", i, " (rank ", workers[i]->result->slot.rank,
                              "): ", workers[i]->log.str()));
    if (workers[i]->result->slot.rank != 0) {
      EXPECT_TRUE(points[i].empty()) << "only rank 0 evaluates";
      continue;
    }
    const std::vector<EvaluationLine>& mine = points[i];
    ASSERT_FALSE(mine.empty());
    std::vector<int64_t> steps;
    for (size_t p = 0; p < mine.size(); ++p) {
      steps.push_back(mine[p].step);
      if (p > 0) {
        EXPECT_GT(mine[p].step, mine[p - 1].step);
        EXPECT_GE(mine[p].seconds, mine[p - 1].seconds);
      }
    }
    // Ring: a point at the first step at or past each multiple of 4 that found the evaluator
    // free, never two within 4 steps but the final one. Ps: a point is the step the shards held
    // when read, and the job goes on meanwhile (its steps take microseconds), so a read can find
    // the shards any number of steps later than it was offered at.
    if (mode == SyncMode::kRing) {
      EXPECT_EQ(steps.front(), 0);
      for (size_t p = 1; p + 1 < steps.size(); ++p) {
        EXPECT_GE(steps[p] / 4, steps[p - 1] / 4 + 1)
            << "points at " << steps[p - 1] << ", " << steps[p];
      }
    }
    for (int64_t step : steps) EXPECT_LE(step, 10);
    EXPECT_EQ(mine.back().step, 10);
    EXPECT_DOUBLE_EQ(mine.back().test_accuracy, workers[i]->result->training.final_eval.accuracy);
    EXPECT_EQ(workers[i]->result->training.final_eval.rows, 40) << "the test set's rows";
  }
}

INSTANTIATE_TEST_SUITE_P(BothModes, ElasticTrainerEvaluationTest,
                         ::testing::Values(SyncMode::kRing, SyncMode::kPs),
                         [](const ::testing::TestParamInfo<SyncMode>& info) {
                           return std::string(SyncModeName(info.param));
                         });

// Seeded chaos in one process: many short jobs, each losing a worker at a random protocol point
// and step, some with a mode switch. RINGSIDE_CHAOS_SEED replays a run.
TEST(ElasticTrainerChaosTest, RandomLossesNeverStallOrDivergeTheJob) {
  uint64_t seed = std::random_device()();
  if (const char* fixed = std::getenv("RINGSIDE_CHAOS_SEED")) {
    seed = std::strtoull(fixed, nullptr, 10);
  }
  std::cout << "chaos seed " << seed << " (replay: RINGSIDE_CHAOS_SEED=" << seed << ")\n";
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 random(seed);
  const std::vector<std::string> points = {"assigned", "census",  "state",     "state_chunk",
                                           "load",     "barrier", "ring_step", "ps_push"};
  constexpr int64_t kSteps = 12;
  for (int job = 0; job < 8; ++job) {
    FaultCase fault;
    fault.start = random() % 2 == 0 ? SyncMode::kRing : SyncMode::kPs;
    fault.shards = 1 + static_cast<int>(random() % 3);
    // A switch fires when some worker reports this many steps (reports start at 1).
    fault.switch_at = random() % 2 == 0 ? 1 + static_cast<int64_t>(random() % (kSteps - 2)) : -1;
    fault.point = points[random() % points.size()];
    // Only points the victim is sure to reach. The regroup points fire at the first generation
    // (load and barrier at the first ps one; load only on rank 0). ring_step fires at every
    // ring step from `after_step` on: before a switch to ps, the victim takes part in every
    // step up to switch_at - 1 (no one completes a step without it).
    const bool ring_at_some_point = fault.start == SyncMode::kRing || fault.switch_at >= 0;
    const bool ps_at_some_point = fault.start == SyncMode::kPs || fault.switch_at >= 0;
    if (fault.point == "ring_step" && !ring_at_some_point) fault.point = "census";
    if (fault.point == "ps_push" && !ps_at_some_point) fault.point = "census";
    if ((fault.point == "load" || fault.point == "barrier") && !ps_at_some_point) {
      fault.point = "state";
    }
    fault.victim = fault.point == "load" ? 0 : static_cast<int>(random() % 3);
    if (fault.point == "state_chunk") {
      // The state goes over only to a member that needs it: here the one left a step behind at
      // a ring switch, with the replay turned off (a level regroup hands nothing over).
      fault.start = SyncMode::kRing;
      fault.switch_at = 1 + static_cast<int64_t>(random() % (kSteps - 2));
      fault.left_behind_at = fault.switch_at - 1;
      fault.replay = false;
    }
    if (fault.point == "ps_push") {
      // The point lies between the first shard and the others: the victim's whole share is on
      // the first, and no other shard ever sees it, so the step cannot complete without it.
      // With one shard there is no such point: whether the whole share, once there, counts
      // races with the victim's cancel (shard_state.h), and at the last step the survivors may
      // finish with the victim's share in. (Seed 3112271852, job 5, hit that.)
      fault.shards = std::max(fault.shards, 2);
      // Ps steps run from the start, or from a switch to ps on (after which every worker has
      // completed at least switch_at steps): any step from there to the end is reached.
      // Before a switch to ring, the victim pushes every step up to switch_at - 1.
      const int64_t first_ps_step =
          fault.start == SyncMode::kPs ? 0 : std::max<int64_t>(0, fault.switch_at);
      const int64_t last_ps_step =
          fault.start == SyncMode::kPs && fault.switch_at >= 0 ? fault.switch_at - 1 : kSteps - 1;
      fault.after_step =
          first_ps_step + static_cast<int64_t>(random() % (last_ps_step - first_ps_step + 1));
    }
    if (fault.point == "ring_step") {
      const int64_t last_ring_step =
          fault.start == SyncMode::kRing && fault.switch_at >= 0 ? fault.switch_at - 1 : kSteps - 1;
      fault.after_step = static_cast<int64_t>(random() % (last_ring_step + 1));
    }
    fault.name = absl::StrCat("chaos job ", job);
    RunJobWithFault(fault, SmallJob(kSteps));
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace ringside::worker
