// Durable state with real processes on loopback (issue: a lost shard, a lost controller and a
// whole cluster stopped all resume the job). Each test kills by PID at a point it observes (a
// step count, a checkpoint written), waits only for observable events, and ends by comparing the
// final parameters with one process training the same job: the global batch of a step does not
// depend on who computes it, so an undisturbed run is the reference.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checkpoint_store.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "tests/support/elastic_test_util.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/worker_processes.h"
#include "worker/local_training.h"

namespace ringside {
namespace {

using testing::MaxRelativeDifference;
using testing::ReadParams;
using testing::SetMode;

TrainingOptions SmallJob(int64_t steps) {
  TrainingOptions training;
  training.model = "32,128,10";
  training.data = "synthetic:2048";
  training.batch_size = 64;
  training.optimizer.kind = OptimizerKind::kAdam;  // optimiser state that must survive too
  training.optimizer.learning_rate = 0.01f;
  training.steps = steps;
  return training;
}

launch::ClusterProcess& Named(launch::LocalCluster& cluster, const std::string& name) {
  for (auto& process : cluster.processes()) {
    if (process->name == name) return *process;
  }
  ADD_FAILURE() << "no process " << name;
  return cluster.controller();
}

// Eventually, restarting dead servers meanwhile (as `ringside up` does) when the cluster is
// asked to.
bool Eventually(launch::LocalCluster& cluster, const std::function<bool()>& condition,
                bool restart = false) {
  return testing::Eventually(cluster, [&] {
    if (restart) {
      const absl::Status restarted = cluster.RestartDeadServers();
      if (!restarted.ok()) {
        ADD_FAILURE() << restarted;
        return true;  // stop waiting; the failure is recorded
      }
    }
    return condition();
  });
}

// Every worker finished the job with the same parameters, and they are the reference's.
void ExpectTheUninterruptedResult(launch::LocalCluster& cluster, const TrainingOptions& training) {
  auto results = cluster.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(cluster);
  ASSERT_FALSE(results->empty());
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum) << "workers disagree";
  }
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (launch::ClusterProcess* worker : cluster.workers()) {
    if (worker->expected_to_end) continue;
    const std::vector<float> params = ReadParams(worker->params_file);
    ASSERT_EQ(params.size(), reference->parameters.size()) << worker->name;
    EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5) << worker->name;
  }
}

std::string LogOf(const launch::ClusterProcess& process) {
  return ReadFileToString(process.process.log_path()).value_or("");
}

TEST(DurableStateTest, AShardKilledAndReplacedAtItsAddressLosesNothing) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(600);
  launch::LocalClusterOptions options =
      testing::ClusterOptions(dir->path(), 3, 2, SyncMode::kPs, training);
  options.restart_servers = true;
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& worker = *c.workers()[0];
  auto ps_steps = [&] {
    return testing::MetricOf(worker, "ringside_steps_total", {{"mode", "ps"}});
  };
  ASSERT_TRUE(Eventually(
      c, [&] { return ps_steps() >= 40; }, true));

  launch::ClusterProcess& shard = Named(c, "ps-1");
  ASSERT_EQ(kill(shard.process.pid(), SIGKILL), 0);
  const double steps_at_kill = ps_steps();
  std::vector<std::string> restarts;
  ASSERT_TRUE(Eventually(
      c,
      [&] {
        for (std::string& report : c.TakeRestartReports()) restarts.push_back(std::move(report));
        return !restarts.empty();
      },
      true));
  EXPECT_NE(restarts[0].find("ps-1"), std::string::npos) << restarts[0];
  // The replacement (empty at start) is loaded by the regroup and serves steps.
  ASSERT_TRUE(Eventually(
      c,
      [&] {
        return ps_steps() >= steps_at_kill + 40 &&
               testing::MetricOf(shard, "ringside_steps_total", {{"mode", "ps"}}) > 0;
      },
      true));
  ExpectTheUninterruptedResult(c, training);
}

TEST(DurableStateTest, AShardKilledWithNoReplacementLeavesTheJobOnTheOthers) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(600);
  auto cluster = launch::LocalCluster::Start(
      testing::ClusterOptions(dir->path(), 3, 2, SyncMode::kPs, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& worker = *c.workers()[0];
  auto ps_steps = [&] {
    return testing::MetricOf(worker, "ringside_steps_total", {{"mode", "ps"}});
  };
  ASSERT_TRUE(Eventually(c, [&] { return ps_steps() >= 40; }));

  launch::ClusterProcess& shard = Named(c, "ps-0");
  shard.expected_to_end = true;
  ASSERT_EQ(kill(shard.process.pid(), SIGKILL), 0);
  const double steps_at_kill = ps_steps();
  ASSERT_TRUE(Eventually(c, [&] { return ps_steps() >= steps_at_kill + 40; }));
  EXPECT_NE(LogOf(c.controller()).find(" workers, 1 shards, mode ps"), std::string::npos)
      << "the job went on over the one shard left:\n"
      << LogOf(c.controller());
  ExpectTheUninterruptedResult(c, training);
}

// The controller killed (SIGKILL), or stopped (SIGTERM: a drain; it saves its record and says
// so, exiting 0), then started again on the same directory.
class ControllerRestartTest : public ::testing::TestWithParam<int> {};

TEST_P(ControllerRestartTest, MembersTrainOnWithoutTheControllerAndARestartedOneCarriesOn) {
  const int signal = GetParam();
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(1500);
  launch::LocalClusterOptions options =
      testing::ClusterOptions(dir->path(), 3, 1, SyncMode::kRing, training);
  options.checkpoint_dir = dir->path() + "/state";
  options.restart_servers = true;
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& worker = *c.workers()[0];
  auto steps = [&](const std::string& mode) {
    return testing::MetricOf(worker, "ringside_steps_total", {{"mode", mode}});
  };
  ASSERT_TRUE(Eventually(c, [&] { return steps("ring") >= 40; }));
  const double generation = testing::MetricOf(c.controller(), "ringside_generation");
  ASSERT_GE(generation, 1);

  // No controller: the members keep training their generation.
  launch::ClusterProcess& controller = c.controller();
  controller.expected_to_end = true;
  ASSERT_EQ(kill(controller.process.pid(), signal), 0);
  if (signal == SIGTERM) {
    auto exited = controller.process.Wait(absl::Seconds(60));
    ASSERT_TRUE(exited.ok()) << exited.status();
    EXPECT_TRUE(exited->ok()) << exited->ToString();
    EXPECT_NE(LogOf(controller).find("controller: stopped by signal 15 at generation "),
              std::string::npos)
        << LogOf(controller);
    EXPECT_NE(LogOf(controller).find("its membership record is saved"), std::string::npos);
  }
  const double steps_at_kill = steps("ring");
  ASSERT_TRUE(Eventually(c, [&] { return steps("ring") >= steps_at_kill + 40; }));

  // The same command line at the same address: it restores its membership record.
  controller.expected_to_end = false;
  ASSERT_TRUE(Eventually(
      c, [&] { return testing::MetricOf(c.controller(), "ringside_generation") >= generation; },
      true));
  EXPECT_EQ(testing::MetricOf(c.controller(), "ringside_generation"), generation)
      << "the numbering goes on: nobody re-registered";
  EXPECT_NE(LogOf(c.controller()).find("resumed generation"), std::string::npos);

  // It runs the job as before: a mode switch after the restart works.
  SetMode(c, SyncMode::kPs);
  ASSERT_TRUE(Eventually(
      c, [&] { return steps("ps") >= 20; }, true));
  EXPECT_GT(testing::MetricOf(c.controller(), "ringside_generation"), generation);
  ExpectTheUninterruptedResult(c, training);
}

INSTANTIATE_TEST_SUITE_P(KilledOrStopped, ControllerRestartTest,
                         ::testing::Values(SIGKILL, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGKILL ? "SIGKILL" : "SIGTERM");
                         });

// Issue 48: a rolling restart, as `kubectl rollout restart` does it. Every worker, then every
// shard, then the controller is sent SIGTERM and replaced while the job trains: each leaves and
// exits 0, the workers' replacements join as new workers, the shards' and the controller's start
// with their own command line at their own address (restart_servers). The heartbeat timeout is
// ten minutes, so no regroup waits for it; the job never restarts, and every worker ends with the
// reference parameters.
TEST(DurableStateTest, ARollingRestartOfEveryProcessNeverStallsOrLosesTheJob) {
  auto dir = launch::TempDir::Create("ringside-rolling-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(8000);
  launch::LocalClusterOptions options =
      testing::ClusterOptions(dir->path(), 3, 2, SyncMode::kPs, training);
  options.checkpoint_dir = dir->path() + "/state";
  options.restart_servers = true;
  options.heartbeat_timeout = absl::Minutes(10);
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  auto generation = [&] { return testing::MetricOf(c.controller(), "ringside_generation"); };
  ASSERT_TRUE(Eventually(c, [&] {
    return testing::MetricOf(*c.workers()[0], "ringside_steps_total", {{"mode", "ps"}}) >= 30;
  }));
  const std::vector<launch::ClusterProcess*> first_workers = c.workers();
  for (launch::ClusterProcess* worker : first_workers) {
    const double before = generation();
    worker->expected_to_end = true;
    ASSERT_EQ(kill(worker->process.pid(), SIGTERM), 0);
    auto exited = worker->process.Wait(absl::Seconds(120));
    ASSERT_TRUE(exited.ok()) << exited.status();
    EXPECT_TRUE(exited->ok()) << worker->name << " " << exited->ToString();
    ASSERT_TRUE(c.AddWorker().ok());
    ASSERT_TRUE(Eventually(c, [&] {
      return generation() >= before + 2 &&
             testing::MetricOf(c.controller(), "ringside_world_size") == 3;
    })) << "the leave and the join, each a generation";
  }
  for (const char* name : {"ps-0", "ps-1"}) {
    launch::ClusterProcess& shard = Named(c, name);
    const double before = generation();
    ASSERT_EQ(kill(shard.process.pid(), SIGTERM), 0);
    ASSERT_TRUE(Eventually(
        c,
        [&] {
          return generation() >= before + 2 &&
                 testing::MetricOf(shard, "ringside_generation") == generation();
        },
        true))
        << name << " left, and its replacement serves the job's generation";
    EXPECT_EQ(shard.restarted, 1) << name;
  }
  launch::ClusterProcess& controller = c.controller();
  const double before = generation();
  ASSERT_EQ(kill(controller.process.pid(), SIGTERM), 0);
  ASSERT_TRUE(Eventually(
      c,
      [&] {
        return controller.restarted == 1 &&
               testing::MetricOf(controller, "ringside_generation") == before;
      },
      true))
      << "the replacement resumes the generation";
  EXPECT_NE(LogOf(controller).find("resumed generation"), std::string::npos);
  ExpectTheUninterruptedResult(c, training);
}

// A job of 3 workers (a ring, or ps mode with `shards` shards) in `dir` (created) whose
// controller checkpoints into `state` every 50 steps: the first cluster and the one resuming it
// run the very same command lines.
launch::LocalClusterOptions CheckpointingOptions(const std::string& dir, const std::string& state,
                                                 const TrainingOptions& training, int shards = 0) {
  std::filesystem::create_directories(dir);
  launch::LocalClusterOptions options = testing::ClusterOptions(
      dir, 3, shards, shards == 0 ? SyncMode::kRing : SyncMode::kPs, training);
  options.checkpoint_dir = state;
  options.checkpoint_every = 50;
  return options;
}

// Trains a first cluster until the controller has written two checkpoints, stops every
// process, and returns the checkpoints left in `state`, newest first.
std::vector<std::string> TrainUntilCheckpointedAndStop(const std::string& dir,
                                                       const std::string& state,
                                                       const TrainingOptions& training,
                                                       int shards = 0) {
  auto cluster = launch::LocalCluster::Start(CheckpointingOptions(dir, state, training, shards));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {};
  launch::LocalCluster& c = **cluster;
  EXPECT_TRUE(Eventually(c, [&] {
    return testing::MetricOf(c.controller(), "ringside_checkpoints_total", {{"what", "written"}}) >=
           2;
  }));
  c.Stop();
  auto store = CheckpointStore::Open(state);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  return store->List().value_or(std::vector<std::string>());
}

uint64_t StepOf(const std::string& checkpoint_path) {
  const std::string name = std::filesystem::path(checkpoint_path).filename();
  return std::stoull(name.substr(std::string("checkpoint-").size(), 20));
}

// The second cluster on the same directory: every worker starts at step 0, so the first
// regroup resumes from the controller's checkpoint of `step`.
void ResumeAndExpectTheUninterruptedResult(const std::string& dir, const std::string& state,
                                           const TrainingOptions& training, uint64_t step,
                                           const std::string& controller_says = "") {
  auto cluster = launch::LocalCluster::Start(CheckpointingOptions(dir, state, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ExpectTheUninterruptedResult(**cluster, training);
  bool resumed = false;
  for (launch::ClusterProcess* worker : (*cluster)->workers()) {
    resumed |=
        LogOf(*worker).find(absl::StrCat("resuming at step ", step, "\n")) != std::string::npos;
    EXPECT_EQ(LogOf(*worker).find("resuming at step 0\n"), std::string::npos)
        << worker->name << " started over:\n"
        << LogOf(*worker);
  }
  EXPECT_TRUE(resumed) << "no worker resumed at step " << step << "\n"
                       << testing::ClusterLogs(**cluster);
  EXPECT_NE(LogOf((*cluster)->controller()).find(controller_says), std::string::npos)
      << LogOf((*cluster)->controller());
}

TEST(DurableStateTest, AWholeClusterStoppedResumesFromTheNewestCheckpoint) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(2000);
  const std::string state = dir->path() + "/state";
  const std::vector<std::string> checkpoints =
      TrainUntilCheckpointedAndStop(dir->path() + "/first", state, training);
  ASSERT_GE(checkpoints.size(), 2u);
  ResumeAndExpectTheUninterruptedResult(dir->path() + "/second", state, training,
                                        StepOf(checkpoints[0]));
}

TEST(DurableStateTest, ACorruptNewestCheckpointIsSkippedForThePreviousOne) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  const TrainingOptions training = SmallJob(2000);
  const std::string state = dir->path() + "/state";
  const std::vector<std::string> checkpoints =
      TrainUntilCheckpointedAndStop(dir->path() + "/first", state, training);
  ASSERT_GE(checkpoints.size(), 2u);
  {
    std::fstream newest(checkpoints[0], std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(newest.good());
    newest.seekp(static_cast<std::streamoff>(std::filesystem::file_size(checkpoints[0]) / 2));
    newest.put('\x5a');  // one byte in the middle of the parameters
  }
  ResumeAndExpectTheUninterruptedResult(
      dir->path() + "/second", state, training, StepOf(checkpoints[1]),
      absl::StrCat("skipping a damaged checkpoint: ", checkpoints[0], ": "));
}

// With backup workers the shards hold the job's state: rank 0's checkpoints are theirs (read as a
// regroup reads them), and a whole cluster stopped and started again resumes from the newest one
// (the shards loaded with it), finishing with every worker on the same parameters.
TEST(DurableStateTest, UnderBackupWorkersTheCheckpointsAreTheShardsStateAndAResumeLoadsIt) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training = SmallJob(600);
  training.backup_workers = 1;
  const std::string state = dir->path() + "/state";
  const std::vector<std::string> checkpoints =
      TrainUntilCheckpointedAndStop(dir->path() + "/first", state, training, /*shards=*/2);
  ASSERT_GE(checkpoints.size(), 2u);
  const uint64_t step = StepOf(checkpoints[0]);
  auto second = launch::LocalCluster::Start(
      CheckpointingOptions(dir->path() + "/second", state, training, /*shards=*/2));
  ASSERT_TRUE(second.ok()) << second.status();
  auto results = (*second)->WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(**second);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum) << "workers disagree";
  }
  bool resumed = false;
  for (launch::ClusterProcess* worker : (*second)->workers()) {
    resumed |=
        LogOf(*worker).find(absl::StrCat("resuming at step ", step, "\n")) != std::string::npos;
  }
  EXPECT_TRUE(resumed) << "no worker resumed at step " << step << "\n"
                       << testing::ClusterLogs(**second);
}

// Under --staleness the shards hold the job's state, so a shard killed and replaced at its address
// (empty) has lost its range: the regroup cannot read it back, and takes the controller's newest
// checkpoint (the shards' state, as rank 0 uploaded it) instead; every step after it is trained
// again, and the job finishes.
TEST(DurableStateTest, UnderStalenessAShardReplacedEmptyFallsBackToTheNewestCheckpoint) {
  auto dir = launch::TempDir::Create("ringside-durable-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training = SmallJob(2000);
  training.staleness = 1;
  launch::LocalClusterOptions options =
      CheckpointingOptions(dir->path(), dir->path() + "/state", training, /*shards=*/2);
  options.restart_servers = true;
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  ASSERT_TRUE(Eventually(
      c,
      [&] {
        return testing::MetricOf(c.controller(), "ringside_checkpoints_total",
                                 {{"what", "written"}}) >= 1;
      },
      true));
  launch::ClusterProcess& shard = Named(c, "ps-1");
  ASSERT_EQ(kill(shard.process.pid(), SIGKILL), 0);
  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) EXPECT_EQ(result.steps, training.steps);
  bool fell_back = false;
  for (launch::ClusterProcess* worker : c.workers()) {
    fell_back |= LogOf(*worker).find("falling back to the controller's checkpoint of step") !=
                 std::string::npos;
  }
  EXPECT_TRUE(fell_back) << testing::ClusterLogs(c);
}

}  // namespace
}  // namespace ringside
