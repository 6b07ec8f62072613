// Faults at named protocol points (worker/fault_injection.h), and a seeded chaos run: a worker
// ends itself with SIGKILL at an exact moment of the elastic protocol, and the survivors must
// finish the job with identical parameters equal to one process training the same steps.
// Nothing here waits for a moment by sleeping: faults fire at protocol points, mode switches
// follow a step count read from the workers' traces, and the end is every survivor's result file.
#include <signal.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "tests/support/elastic_test_util.h"
#include "tests/support/worker_processes.h"
#include "worker/local_training.h"

namespace ringside {
namespace {

using testing::ClusterLogs;
using testing::Eventually;
using testing::MaxRelativeDifference;
using testing::ReadParams;
using testing::SetMode;

struct FaultCase {
  std::string name;
  std::string fault;  // --fault_at of the victim
  int victim = 1;     // start order of the worker that dies
  SyncMode start = SyncMode::kRing;
  int shards = 1;
  int64_t switch_at = -1;  // switch to the other mode once a survivor completed this many steps
};

void PrintTo(const FaultCase& fault, std::ostream* out) { *out << fault.name; }

std::string CaseName(const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; }

// Runs one job with the fault, and checks every survivor against the one-process reference.
void RunJobWithFault(const FaultCase& fault, const TrainingOptions& training) {
  SCOPED_TRACE(absl::StrCat(fault.name, ": --fault_at=", fault.fault, " on worker-", fault.victim,
                            ", starting in ", SyncModeName(fault.start), " mode, ", fault.shards,
                            " shard(s), switch at step ", fault.switch_at));
  auto dir = launch::TempDir::Create("ringside-fault-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options =
      testing::ClusterOptions(dir->path(), 3, fault.shards, fault.start, training);
  options.collective_timeout = absl::Seconds(20);
  options.flags_of_worker[fault.victim] = {"--fault_at=" + fault.fault};
  const int survivor_index = fault.victim == 0 ? 1 : 0;
  // The survivor waits at the switch's step for the generation the switch brings, so the switch
  // lands there however fast the job runs (the others wait in that step's collective).
  if (fault.switch_at >= 0) {
    options.flags_of_worker[survivor_index] = {absl::StrCat("--hold_at=", fault.switch_at)};
  }
  auto started = launch::LocalCluster::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  launch::LocalCluster& cluster = **started;
  const std::vector<launch::ClusterProcess*> workers = cluster.workers();
  launch::ClusterProcess& victim = *workers[fault.victim];
  launch::ClusterProcess& survivor = *workers[survivor_index];

  if (fault.switch_at >= 0) {
    ASSERT_TRUE(Eventually(
        cluster,
        [&] {
          return ReadStepTrace(survivor.trace_file).lines.size() >=
                 static_cast<size_t>(fault.switch_at);
        },
        absl::Seconds(120), /*workers_may_die=*/true));
    SetMode(cluster, fault.start == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing);
  }
  auto results = cluster.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << ClusterLogs(cluster);

  // The fault fired: the victim ended by SIGKILL, and the survivors finished under a newer
  // generation than the one it died in.
  ASSERT_TRUE(victim.process.Poll().has_value()) << "the victim never reached " << fault.fault;
  EXPECT_NE(victim.process.exit_status()->ToString().find("signal 9"), std::string::npos)
      << victim.process.exit_status()->ToString();
  ASSERT_EQ(results->size(), 2u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.world, 2);
    EXPECT_GE(result.generation, 2u);
    EXPECT_EQ(result.checksum, (*results)[0].checksum) << "the survivors' parameters differ";
  }
  if (fault.switch_at >= 0) {
    const std::string log =
        ReadFileToString(dir->File(absl::StrCat("worker-", survivor_index, ".log"))).value_or("");
    EXPECT_NE(log.find(absl::StrCat("holding after step ", fault.switch_at)), std::string::npos)
        << "the survivor never held for the switch\n"
        << log;
  }
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> params = ReadParams(survivor.params_file);
  ASSERT_EQ(params.size(), reference->parameters.size());
  EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5);
  cluster.Stop();
}

TrainingOptions SmallJob(int64_t steps) {
  TrainingOptions training;
  training.model = "16,64,4";
  training.data = "synthetic:512";
  training.batch_size = 32;
  training.steps = steps;
  return training;
}

// Three workers and two shards in ps mode.
launch::LocalClusterOptions PsJobOptions(const std::string& dir, const TrainingOptions& training) {
  launch::LocalClusterOptions options = testing::ClusterOptions(dir, 3, 2, SyncMode::kPs, training);
  options.collective_timeout = absl::Seconds(20);
  return options;
}

class ElasticFaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ElasticFaultTest, SurvivorsFinishWithTheReferenceParameters) {
  RunJobWithFault(GetParam(), SmallJob(40));
}

INSTANTIATE_TEST_SUITE_P(
    EveryProtocolPoint, ElasticFaultTest,
    ::testing::Values(FaultCase{"BeforeTheFirstRegroup", "assigned", 1, SyncMode::kRing, 1, -1},
                      FaultCase{"DuringTheCensus", "census", 2, SyncMode::kRing, 1, -1},
                      FaultCase{"DuringTheStateHandOver", "state", 1, SyncMode::kRing, 1, -1},
                      FaultCase{"TheLoaderBeforeTheShardLoad", "load", 0, SyncMode::kPs, 2, -1},
                      FaultCase{"AtTheLoadBarrier", "barrier", 2, SyncMode::kPs, 2, -1},
                      FaultCase{"MidRingStep", "ring_step@7", 1, SyncMode::kRing, 1, -1},
                      FaultCase{"MidPsStepBetweenShards", "ps_push@7", 1, SyncMode::kPs, 2, -1},
                      FaultCase{"DuringASwitchToPs", "switch", 2, SyncMode::kRing, 2, 5},
                      FaultCase{"DuringASwitchToRing", "switch", 1, SyncMode::kPs, 2, 5},
                      FaultCase{"AfterASwitchMidPsStep", "ps_push@12", 0, SyncMode::kRing, 2, 5}),
    CaseName);

// Seeded chaos: several short jobs, each losing a worker at a randomly chosen protocol point and
// step, some with a mode switch at a random step. RINGSIDE_CHAOS_SEED replays a run.
TEST(ElasticChaosTest, RandomFaultsNeverStallOrDivergeTheJob) {
  uint64_t seed = std::random_device()();
  if (const char* fixed = std::getenv("RINGSIDE_CHAOS_SEED"))
    seed = std::strtoull(fixed, nullptr, 10);
  std::cout << "chaos seed " << seed << " (replay: RINGSIDE_CHAOS_SEED=" << seed << ")\n";
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 random(seed);
  const std::vector<std::string> points = {"assigned", "census",    "state",   "load",
                                           "barrier",  "ring_step", "ps_push", "switch"};
  for (int job = 0; job < 4; ++job) {
    FaultCase fault;
    const std::string point = points[random() % points.size()];
    fault.start = random() % 2 == 0 ? SyncMode::kRing : SyncMode::kPs;
    fault.shards = 1 + static_cast<int>(random() % 2);
    fault.victim = static_cast<int>(random() % 3);
    const int64_t step = static_cast<int64_t>(random() % 15);
    fault.switch_at = random() % 2 == 0 ? 3 + static_cast<int64_t>(random() % 10) : -1;
    // Points that only some moments reach: make sure the job reaches them.
    if (point == "load") fault.victim = 0;  // only rank 0 loads; ranks follow start order
    if ((point == "load" || point == "barrier" || point == "ps_push") &&
        fault.start == SyncMode::kRing && fault.switch_at < 0) {
      fault.start = SyncMode::kPs;
    }
    if (point == "ring_step" && fault.start == SyncMode::kPs && fault.switch_at < 0) {
      fault.start = SyncMode::kRing;
    }
    if (point == "switch" && fault.switch_at < 0) fault.switch_at = 3;
    const bool at_step = point == "ring_step" || point == "ps_push";
    // A step-bound fault fires in its own mode: before the switch if the job starts in it,
    // after the switch otherwise.
    const SyncMode point_mode = point == "ring_step" ? SyncMode::kRing : SyncMode::kPs;
    int64_t after = step;
    if (at_step && fault.switch_at >= 0) {
      after = point_mode == fault.start ? step % fault.switch_at : fault.switch_at + step;
    }
    fault.fault = at_step ? absl::StrCat(point, "@", after) : point;
    fault.name = absl::StrCat("chaos job ", job);
    RunJobWithFault(fault, SmallJob(40));
    if (::testing::Test::HasFailure()) {
      FAIL() << "replay with RINGSIDE_CHAOS_SEED=" << seed;
    }
  }
}

// Mode switches in a quick succession while a 2-shard job trains (each one as soon as another
// step has completed): every switch cancels the pushes in flight, which may leave a step applied
// on one shard only. Every shard must stay consistent, and the job must end equal to one process.
TEST(ElasticSwitchStormTest, ManySwitchesLeaveNoShardAhead) {
  auto dir = launch::TempDir::Create("ringside-storm-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(80);
  launch::LocalClusterOptions options = PsJobOptions(dir->path(), training);
  auto started = launch::LocalCluster::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  launch::LocalCluster& cluster = **started;
  launch::ClusterProcess& watched = *cluster.workers()[0];
  SyncMode next = SyncMode::kRing;
  size_t seen = 0;
  int switches = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(120);  // only against a hang
  while (switches < 30 && absl::Now() < deadline) {
    // Done when its result is written: a worker that adopts a more advanced member's state skips
    // trace lines, so the trace's length is not the step count.
    if (ReadFileToString(watched.result_file).ok()) break;
    const size_t steps = ReadStepTrace(watched.trace_file).lines.size();
    if (steps > seen) {
      seen = steps;
      SetMode(cluster, next);
      next = next == SyncMode::kRing ? SyncMode::kPs : SyncMode::kRing;
      ++switches;
    }
    if (std::optional<launch::ProcessEnd> dead = cluster.DeadChild()) FAIL() << dead->Describe();
    absl::SleepFor(absl::Milliseconds(5));  // polling the trace, not waiting for a moment
  }
  EXPECT_GE(switches, 10) << ClusterLogs(cluster);
  auto results = cluster.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << ClusterLogs(cluster);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum);
  }
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_LT(MaxRelativeDifference(ReadParams(watched.params_file), reference->parameters), 1e-5);
  cluster.Stop();
}

// The lines of every worker's log that say it took the job's state from the shards: read whole,
// or (`or_kept`) kept by them, the shard map unchanged, with its parameters read.
int ShardStateReads(const launch::TempDir& dir, bool or_kept) {
  int reads = 0;
  for (int w = 0; w < 3; ++w) {
    const std::string log =
        ReadFileToString(dir.File(absl::StrCat("worker-", w, ".log"))).value_or("");
    std::vector<std::string> lines = {"from the shards, which held it"};
    if (or_kept) lines.push_back("the shards kept the job's state");
    for (const std::string& says : lines) {
      for (size_t at = log.find(says); at != std::string::npos; at = log.find(says, at + 1)) {
        ++reads;
      }
    }
  }
  return reads;
}

// Under --staleness=1 the shards hold the job's state. A slow worker (--straggler) lost mid-step
// blocks the others once they are a step ahead of it; the controller's new generation releases
// them, and its regroup takes the job's state from the shards, since no worker holds it (they
// keep it and rank 0 reads its parameters, or, a step apart, rank 0 reads every shard's
// parameters and optimiser state).
TEST(ElasticStaleFaultTest, ALostSlowWorkerReleasesTheOthersThroughARegroupFromTheShards) {
  auto dir = launch::TempDir::Create("ringside-stale-fault-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training = SmallJob(40);
  training.staleness = 1;
  training.straggler = Straggler{2, 3.0f};
  launch::LocalClusterOptions options = PsJobOptions(dir->path(), training);
  options.flags_of_worker[2] = {"--fault_at=ps_push@7"};
  auto started = launch::LocalCluster::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  launch::LocalCluster& cluster = **started;
  launch::ClusterProcess& victim = *cluster.workers()[2];
  auto results = cluster.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << ClusterLogs(cluster);
  ASSERT_TRUE(victim.process.Poll().has_value()) << "the victim never reached ps_push";
  EXPECT_NE(victim.process.exit_status()->ToString().find("signal 9"), std::string::npos);
  ASSERT_EQ(results->size(), 2u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.world, 2);
    EXPECT_GE(result.generation, 2u);
  }
  EXPECT_GE(ShardStateReads(*dir, /*or_kept=*/true), 1) << ClusterLogs(cluster);
  cluster.Stop();
}

// Switching to ring after async steps: no worker holds the job's state (each only its last
// pull), so the switch's regroup reads it from the shards, and every worker trains on from the
// very same parameters and optimiser state: the ring ends with identical parameters everywhere.
TEST(ElasticStaleFaultTest, ASwitchToRingAfterAsyncStepsStartsEveryWorkerFromTheShardsState) {
  auto dir = launch::TempDir::Create("ringside-stale-switch-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training = SmallJob(40);
  training.staleness = kAsyncStaleness;
  launch::LocalClusterOptions options = PsJobOptions(dir->path(), training);
  auto started = launch::LocalCluster::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  launch::LocalCluster& cluster = **started;
  launch::ClusterProcess& watched = *cluster.workers()[0];
  ASSERT_TRUE(Eventually(
      cluster, [&] { return ReadStepTrace(watched.trace_file).lines.size() >= 5; },
      absl::Seconds(120)));
  SetMode(cluster, SyncMode::kRing);
  auto results = cluster.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << ClusterLogs(cluster);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum) << "the workers' parameters differ";
  }
  EXPECT_GE(ShardStateReads(*dir, /*or_kept=*/false), 1) << ClusterLogs(cluster);
  cluster.Stop();
}

}  // namespace
}  // namespace ringside
