// Elastic jobs as real processes on loopback (launch/local_cluster.h): a controller, shards and
// workers with no static flags; live mode switches; a worker killed with SIGKILL; a late joiner;
// a worker and a shard stopped (SIGSTOP) until the controller dropped them, then continued.
#include <signal.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/compression.h"
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

using testing::Eventually;
using testing::FindSample;
using testing::MaxRelativeDifference;
using testing::ReadParams;
using testing::ScrapeMetrics;
using testing::SetMode;

using TraceLine = StepTraceLine;

std::vector<TraceLine> ReadTrace(const std::string& path) { return ReadStepTrace(path).lines; }

double Metric(const launch::ClusterProcess& process, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  return launch::FindSample(ScrapeMetrics(process.metrics_port), name, labels).value_or(-1);
}

// Every payload byte a node sent in `mode`, over all its links.
double LinkBytes(const launch::ClusterProcess& process, const std::string& mode) {
  return launch::SumSamples(ScrapeMetrics(process.metrics_port), "ringside_link_bytes_total",
                            {{"mode", mode}});
}

std::string LogOf(const launch::ClusterProcess& process) {
  return ReadFileToString(process.process.log_path()).value_or("");
}

TEST(ElasticClusterTest, SwitchesRingToPsAndBackWithTheSameParametersAndFallingLoss) {
  auto dir = launch::TempDir::Create("ringside-elastic-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training;
  training.model = "64,256,256,10";
  training.data = "synthetic:4096";
  training.batch_size = 64;
  training.steps = 100000;  // long enough; the test stops the cluster
  auto cluster = launch::LocalCluster::Start(
      testing::ClusterOptions(dir->path(), 4, 2, SyncMode::kRing, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  const std::vector<launch::ClusterProcess*> workers = c.workers();
  launch::ClusterProcess& shard = *c.processes()[1];
  auto steps = [&](const std::string& mode) {
    return Metric(*workers[0], "ringside_steps_total", {{"mode", mode}});
  };

  ASSERT_TRUE(Eventually(c, [&] { return steps("ring") >= 10; }));
  SetMode(c, SyncMode::kPs);
  ASSERT_TRUE(Eventually(c, [&] { return steps("ps") >= 10; }));
  const double ring_bytes_before_ps_ends = LinkBytes(*workers[0], "ring");
  const double ring_steps_at_switch = steps("ring");
  SetMode(c, SyncMode::kRing);
  ASSERT_TRUE(Eventually(c, [&] { return steps("ring") >= ring_steps_at_switch + 10; }));
  const double ps_bytes_after = LinkBytes(*workers[0], "ps");
  const double shard_ps_bytes = Metric(shard, "ringside_steps_total", {{"mode", "ps"}});
  // Ten more ring steps (an event, not a pause): the ps links must not have moved during them.
  const double ring_steps_after = steps("ring");
  ASSERT_TRUE(Eventually(c, [&] { return steps("ring") >= ring_steps_after + 10; }));
  EXPECT_EQ(LinkBytes(*workers[0], "ps"), ps_bytes_after)
      << "ps links must be quiet while the ring is active";
  EXPECT_EQ(Metric(shard, "ringside_steps_total", {{"mode", "ps"}}), shard_ps_bytes);
  EXPECT_GT(ps_bytes_after, 0);
  EXPECT_GT(ring_bytes_before_ps_ends, 0);
  c.Stop();

  // Every worker's trace: identical parameters after every step they all completed, each
  // mode's steps in order, and the loss falling from phase to phase.
  std::vector<std::vector<TraceLine>> traces;
  for (launch::ClusterProcess* w : workers) traces.push_back(ReadTrace(w->trace_file));
  std::map<int64_t, std::vector<const TraceLine*>> by_step;
  for (const auto& trace : traces) {
    for (const TraceLine& line : trace) by_step[line.step].push_back(&line);
  }
  std::vector<std::string> phases;
  std::map<std::string, std::vector<double>> loss_by_phase;
  int checked = 0;
  for (const auto& [step, lines] : by_step) {
    if (lines.size() != workers.size()) continue;  // the last, cut short by the stop
    for (const TraceLine* line : lines) {
      EXPECT_EQ(line->checksum, lines[0]->checksum) << "parameters differ after step " << step;
      EXPECT_EQ(line->mode, lines[0]->mode);
    }
    ++checked;
    const std::string phase = absl::StrCat(lines[0]->generation, lines[0]->mode);
    if (phases.empty() || phases.back() != phase) phases.push_back(phase);
    double mean = 0;
    for (const TraceLine* line : lines) mean += line->loss / lines.size();
    loss_by_phase[phase].push_back(mean);
  }
  EXPECT_GT(checked, 30);
  ASSERT_EQ(phases.size(), 3u) << "ring, ps, ring";
  EXPECT_NE(phases[0].find("ring"), std::string::npos);
  EXPECT_NE(phases[1].find("ps"), std::string::npos);
  EXPECT_NE(phases[2].find("ring"), std::string::npos);
  auto first10 = [](const std::vector<double>& v) {
    double sum = 0;
    for (size_t i = 0; i < std::min<size_t>(10, v.size()); ++i) sum += v[i];
    return sum / std::min<size_t>(10, v.size());
  };
  EXPECT_GT(first10(loss_by_phase[phases[0]]), first10(loss_by_phase[phases[1]]));
  EXPECT_GT(first10(loss_by_phase[phases[1]]), first10(loss_by_phase[phases[2]]));
}

TEST(ElasticClusterTest, SurvivesAKilledWorkerAndAdmitsALateOneMatchingTheReference) {
  auto dir = launch::TempDir::Create("ringside-elastic-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training;
  training.model = "32,128,10";
  training.data = "synthetic:2048";
  training.batch_size = 64;
  training.steps = 1200;
  auto cluster = launch::LocalCluster::Start(
      testing::ClusterOptions(dir->path(), 4, 0, SyncMode::kRing, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  std::vector<launch::ClusterProcess*> workers = c.workers();
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(*workers[3], "ringside_steps_total", {{"mode", "ring"}}) >= 50;
  }));
  workers[3]->expected_to_end = true;
  kill(workers[3]->process.pid(), SIGKILL);
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(c.controller(), "ringside_world_size") == 3 &&
           Metric(c.controller(), "ringside_generation") == 2;
  }));
  EXPECT_LT(absl::Now() - killed, absl::Seconds(10)) << "a few heartbeat timeouts";

  auto joiner = c.AddWorker();
  ASSERT_TRUE(joiner.ok()) << joiner.status();
  ASSERT_TRUE(Eventually(c, [&] { return Metric(c.controller(), "ringside_world_size") == 4; }));
  auto results = c.WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 4u);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum);
  }
  EXPECT_FALSE(ReadTrace((*joiner)->trace_file).empty()) << "the late worker trained steps";

  // The global batch is the same whoever computes it, so the reference is one process.
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> params = ReadParams((*joiner)->params_file);
  ASSERT_EQ(params.size(), reference->parameters.size());
  EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5);
}

// The member id the controller gave `process` at its first registration ("... as member N").
std::string MemberIdOf(const launch::ClusterProcess& process) {
  const std::string log = LogOf(process);
  const size_t at = log.find(" as member ");
  if (at == std::string::npos) return "";
  const size_t begin = at + std::string(" as member ").size();
  return log.substr(begin, log.find_first_not_of("0123456789", begin) - begin);
}

// The shard name of the newest "ps-<i>: generation" line of a shard's log.
std::string LastShardName(const launch::ClusterProcess& process) {
  const std::string log = LogOf(process);
  const size_t at = log.rfind(": generation ");
  if (at == std::string::npos) return "";
  const size_t line = log.rfind('\n', at);
  const size_t begin = line == std::string::npos ? 0 : line + 1;
  return log.substr(begin, at - begin);
}

// Stops `process` (SIGSTOP: alive, silent) until the controller drops it, then continues it.
// What a process descheduled under heavy load looks like to the controller, with the drop
// observed in the controller's log rather than waited for.
void SilenceUntilDropped(launch::LocalCluster& cluster, launch::ClusterProcess& process) {
  const std::string id = MemberIdOf(process);
  ASSERT_FALSE(id.empty()) << LogOf(process);
  ASSERT_EQ(kill(process.process.pid(), SIGSTOP), 0);
  absl::Cleanup resume = [&] { kill(process.process.pid(), SIGCONT); };
  // The drop, and then the generation without it (logged once its metrics are exported).
  ASSERT_TRUE(Eventually(cluster, [&] {
    const std::string log = LogOf(cluster.controller());
    const size_t dropped = log.find(absl::StrCat("dropped member ", id, " "));
    return dropped != std::string::npos &&
           log.find("controller: generation", dropped) != std::string::npos;
  }));
}

launch::ClusterProcess& Named(launch::LocalCluster& c, const std::string& name) {
  for (auto& process : c.processes()) {
    if (process->name == name) return *process;
  }
  ADD_FAILURE() << "no process " << name;
  return *c.processes().front();
}

// The job's results from its `workers` workers: each ran every step of `training`, and all
// hold the same parameters (their checksums agree).
void ExpectEveryWorkerFinishedAlike(launch::LocalCluster& c, const TrainingOptions& training,
                                    size_t workers) {
  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), workers);
  for (const TrainResultFile& result : *results) {
    EXPECT_EQ(result.steps, training.steps);
    EXPECT_EQ(result.checksum, (*results)[0].checksum) << "workers disagree";
  }
}

// Waits until worker-0 has trained 30 ps-mode steps.
void TrainPast30Steps(launch::LocalCluster& c) {
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(*c.workers()[0], "ringside_steps_total", {{"mode", "ps"}}) >= 30;
  }));
}

// Issue 23: a live worker and a live shard that missed their heartbeats (stopped past the
// controller's timeout) register again with fresh credentials and rejoin the job, the shard at
// its old index, and the job ends on every worker with the reference parameters.
TEST(ElasticClusterTest, ALiveWorkerAndShardDroppedRegisterAgainMatchingTheReference) {
  auto dir = launch::TempDir::Create("ringside-elastic-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training;
  training.model = "32,128,10";
  training.data = "synthetic:2048";
  training.batch_size = 64;
  training.steps = 1500;
  auto cluster = launch::LocalCluster::Start(
      testing::ClusterOptions(dir->path(), 3, 2, SyncMode::kPs, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  std::vector<launch::ClusterProcess*> workers = c.workers();
  launch::ClusterProcess* shard = &Named(c, "ps-1");
  ASSERT_NO_FATAL_FAILURE(TrainPast30Steps(c));

  ASSERT_NO_FATAL_FAILURE(SilenceUntilDropped(c, *workers[2]));
  ASSERT_TRUE(Eventually(c, [&] {
    return LogOf(*workers[2]).find("registering again") != std::string::npos &&
           testing::MetricOf(c.controller(), "ringside_world_size") == 3;
  })) << "the worker is back";

  const std::string index_before = LastShardName(*shard);
  ASSERT_NO_FATAL_FAILURE(SilenceUntilDropped(c, *shard));
  // Registering again comes after the drop's generation, so the shard follows the controller's
  // generation again only once it is back.
  ASSERT_TRUE(Eventually(c, [&] {
    return LogOf(*shard).find("registering again") != std::string::npos &&
           testing::MetricOf(*shard, "ringside_generation") ==
               testing::MetricOf(c.controller(), "ringside_generation");
  })) << "the shard is back";
  EXPECT_EQ(LastShardName(*shard), index_before) << "at its old index:\n" << LogOf(*shard);

  ASSERT_NO_FATAL_FAILURE(ExpectEveryWorkerFinishedAlike(c, training, 3u));
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> params = ReadParams(workers[2]->params_file);
  ASSERT_EQ(params.size(), reference->parameters.size());
  EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5);
  EXPECT_NE(LogOf(c.controller()).find("again: it had seen generation"), std::string::npos);
}

// The leave tests' job: short, and a heartbeat timeout of ten minutes, so no regroup can come
// from it: a leave that did not work stalls the test until Eventually's limit.
launch::LocalClusterOptions LeaveJob(const std::string& dir, int workers, int shards,
                                     SyncMode mode) {
  TrainingOptions training;
  training.model = "32,128,10";
  training.data = "synthetic:2048";
  training.batch_size = 64;
  training.steps = 600;
  launch::LocalClusterOptions options =
      testing::ClusterOptions(dir, workers, shards, mode, training);
  options.heartbeat_timeout = absl::Minutes(10);
  return options;
}

// Sends `process` SIGTERM and expects it to exit 0 having logged `says`.
void ExpectItLeaves(launch::ClusterProcess& process, const std::string& says) {
  process.expected_to_end = true;
  ASSERT_EQ(kill(process.process.pid(), SIGTERM), 0);
  auto exited = process.process.Wait(absl::Seconds(120));
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_TRUE(exited->ok()) << exited->ToString() << "\n" << LogOf(process);
  EXPECT_NE(LogOf(process).find(says), std::string::npos) << LogOf(process);
}

// The job ended on `workers` workers in one generation after the first (exactly one regroup),
// every one with the reference parameters (no step lost or applied twice).
void ExpectOneRegroupAndTheReference(launch::LocalCluster& c, const TrainingOptions& training,
                                     size_t workers) {
  ASSERT_NO_FATAL_FAILURE(ExpectEveryWorkerFinishedAlike(c, training, workers));
  EXPECT_EQ(Metric(c.controller(), "ringside_generation"), 2) << "exactly one regroup";
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> params = ReadParams(c.workers()[0]->params_file);
  ASSERT_EQ(params.size(), reference->parameters.size());
  EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5);
}

// Issue 48: a worker sent SIGTERM (a drain, a rolling restart) leaves at a step boundary and
// exits 0; the controller regroups the survivors at once.
class LeavingWorkerTest : public ::testing::TestWithParam<SyncMode> {};

TEST_P(LeavingWorkerTest, ASignalledWorkerLeavesAndTheOthersRegroupAtOnce) {
  const SyncMode mode = GetParam();
  auto dir = launch::TempDir::Create("ringside-leave-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options =
      LeaveJob(dir->path(), 3, mode == SyncMode::kPs ? 2 : 0, mode);
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& leaver = *c.workers()[2];
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(leaver, "ringside_steps_total", {{"mode", std::string(SyncModeName(mode))}}) >=
           30;
  }));
  ASSERT_NO_FATAL_FAILURE(ExpectItLeaves(
      leaver, "worker-2: stopped by signal 15; left the job, which goes on in generation 2"));
  ASSERT_TRUE(Eventually(c, [&] { return Metric(c.controller(), "ringside_world_size") == 2; }));
  EXPECT_NE(LogOf(c.controller()).find("(worker-2) left having completed "), std::string::npos)
      << LogOf(c.controller());
  ExpectOneRegroupAndTheReference(c, options.training, 2);
}

// Issue 48: a shard sent SIGTERM in synchronous ps mode (the workers hold the state) leaves and
// exits 0; the workers regroup at once onto the other shard and end with the reference.
TEST(ElasticClusterTest, ASignalledShardLeavesAndTheWorkersRegroupOntoTheOther) {
  auto dir = launch::TempDir::Create("ringside-leave-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options = LeaveJob(dir->path(), 2, 2, SyncMode::kPs);
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess* shard = &Named(c, "ps-1");
  ASSERT_NO_FATAL_FAILURE(TrainPast30Steps(c));
  ASSERT_NO_FATAL_FAILURE(ExpectItLeaves(
      *shard, "ps: stopped by signal 15; left the job, which goes on in generation 2"));
  EXPECT_EQ(LogOf(*shard).find("authoritative state"), std::string::npos)
      << "the workers held the state";
  ExpectOneRegroupAndTheReference(c, options.training, 2);
}

// Issue 47: a job compressed through the shards (top-k, after a warm-up) across a shard's
// SIGTERM: the workers regroup onto the other shard at once, a new generation with zero
// residuals on both sides (the documented reset), and finish the job bit-identical to each other.
// Compressed steps follow another path than the uncompressed reference: they are checked for
// agreement, not against it.
TEST(ElasticClusterTest, ACompressedJobGoesOnAcrossAShardsLeave) {
  auto dir = launch::TempDir::Create("ringside-leave-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = LeaveJob(dir->path(), 2, 2, SyncMode::kPs);
  options.training.compression = Compression{CompressionKind::kTopK, 0.05f};
  options.training.compression_warmup = 5;
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  ASSERT_NO_FATAL_FAILURE(TrainPast30Steps(c));
  ASSERT_NO_FATAL_FAILURE(ExpectItLeaves(
      Named(c, "ps-1"), "ps: stopped by signal 15; left the job, which goes on in generation 2"));
  ASSERT_NO_FATAL_FAILURE(ExpectEveryWorkerFinishedAlike(c, options.training, 2u));
  EXPECT_EQ(Metric(c.controller(), "ringside_generation"), 2) << "exactly one regroup";
  // Compressed it was, and every byte the cost model's: worker-0's link to the shard that
  // stayed carried the codec's bytes (its expected counter), short only of what the step the
  // leave cut off had not sent yet (counted expected when it began: at most one share, under
  // the codec's bytes of the whole K in one segment, 4 + 8·276), and all it sent is far below
  // the K floats a step an uncompressed push sends (K = 5514 for 32,128,10).
  launch::ClusterProcess& worker = *c.workers()[0];
  const std::map<std::string, std::string> link = {
      {"src", "worker-0"}, {"dst", "ps-0"}, {"mode", "ps"}};
  const double sent = Metric(worker, "ringside_link_bytes_total", link);
  const double expected = Metric(worker, "ringside_link_expected_bytes_total", link);
  EXPECT_GT(sent, 0);
  EXPECT_LE(sent, expected);
  EXPECT_LT(expected - sent, 4 + 8 * 276);
  EXPECT_LT(LinkBytes(worker, "ps"), 0.2 * options.training.steps * 5514 * 4);
}

// The number after `prefix` in `text`; -1 when it is not there.
int64_t NumberAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  int64_t number = -1;
  if (!absl::SimpleAtoi(
          text.substr(at + prefix.size(), text.find_first_not_of("0123456789", at + prefix.size()) -
                                              at - prefix.size()),
          &number)) {
    return -1;
  }
  return number;
}

// Issue 48 point 2: where the shards hold the job's state (bounded staleness, backup workers), a
// shard sent SIGTERM hands its range over before it exits: the next generation's worker-0 reads
// it from the departed shard (membership rule 12). The job has no checkpoint to fall back to, so
// any range lost would end it; it resumes at the most steps applied, at least the leaver's, and
// finishes after exactly one regroup.
struct ShardsHoldingTheState {
  const char* name;
  int64_t staleness;
  int64_t backup_workers;
};

void PrintTo(const ShardsHoldingTheState& variant, std::ostream* out) { *out << variant.name; }

// The leave tests' job (3 workers, 2 shards, ps mode) under `variant`.
launch::LocalClusterOptions LeaveJobHoldingTheState(const std::string& dir,
                                                    const ShardsHoldingTheState& variant) {
  launch::LocalClusterOptions options = LeaveJob(dir, 3, 2, SyncMode::kPs);
  options.training.staleness = variant.staleness;
  options.training.backup_workers = variant.backup_workers;
  return options;
}

class HandingOverShardTest : public ::testing::TestWithParam<ShardsHoldingTheState> {};

TEST_P(HandingOverShardTest, ASignalledShardHandsItsRangeOverAndNoStepIsLost) {
  auto dir = launch::TempDir::Create("ringside-handover-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options = LeaveJobHoldingTheState(dir->path(), GetParam());
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess* shard = &Named(c, "ps-1");
  ASSERT_NO_FATAL_FAILURE(TrainPast30Steps(c));
  ASSERT_NO_FATAL_FAILURE(ExpectItLeaves(*shard, "ps: handed its range's state over; exiting"));
  const int64_t leaver_step = NumberAfter(LogOf(*shard), "handing over its range's state (step ");
  EXPECT_GE(leaver_step, 30) << LogOf(*shard);

  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) EXPECT_EQ(result.steps, options.training.steps);
  const std::string rank0 = LogOf(*c.workers()[0]);
  const int64_t resumed = NumberAfter(rank0, "read the job's state at step ");
  EXPECT_GE(resumed, leaver_step) << "the regroup resumed behind the leaver's range:\n" << rank0;
  EXPECT_EQ(rank0.find("cannot read the job's state"), std::string::npos) << rank0;
  EXPECT_EQ(Metric(c.controller(), "ringside_generation"), 2) << "exactly one regroup";
  EXPECT_NE(LogOf(c.controller()).find("offered to generation 2's worker-0"), std::string::npos)
      << LogOf(c.controller());
}

INSTANTIATE_TEST_SUITE_P(ShardsHoldTheState, HandingOverShardTest,
                         ::testing::Values(ShardsHoldingTheState{"staleness", 1, 0},
                                           ShardsHoldingTheState{"backup_workers", 0, 1}),
                         [](const ::testing::TestParamInfo<ShardsHoldingTheState>& info) {
                           return std::string(info.param.name);
                         });

// Issue 48 point 1: where the shards hold the job's state, a worker sent SIGTERM leaves and the
// shards keep their state for the survivors' generation (the same shard map): nothing of it is
// read, sent and loaded back, only its parameters go over, at the step the shards resume at,
// which no survivor's or leaver's completed step is beyond (no step applied twice, none lost).
class LeavingOverKeptShardsTest : public ::testing::TestWithParam<ShardsHoldingTheState> {};

TEST_P(LeavingOverKeptShardsTest, TheShardsKeepTheirStateAndTheSurvivorsTrainOn) {
  auto dir = launch::TempDir::Create("ringside-leave-kept-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options = LeaveJobHoldingTheState(dir->path(), GetParam());
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& leaver = *c.workers()[2];
  // The leaver's own steps: under async each worker goes at its own pace.
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(leaver, "ringside_steps_total", {{"mode", "ps"}}) >= 30;
  }));
  ASSERT_NO_FATAL_FAILURE(ExpectItLeaves(
      leaver, "worker-2: stopped by signal 15; left the job, which goes on in generation 2"));
  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), 2u);
  for (const TrainResultFile& result : *results) EXPECT_EQ(result.steps, options.training.steps);
  EXPECT_EQ(Metric(c.controller(), "ringside_generation"), 2) << "exactly one regroup";
  const std::string rank0 = LogOf(*c.workers()[0]);
  const int64_t kept = NumberAfter(rank0, "the shards kept the job's state at step ");
  const int64_t left = NumberAfter(LogOf(c.controller()), "(worker-2) left having completed ");
  EXPECT_GE(left, 30) << LogOf(c.controller());
  EXPECT_GE(kept, left) << rank0;
  EXPECT_EQ(rank0.find("did not keep"), std::string::npos) << rank0;
  EXPECT_EQ(rank0.find("read the job's state at step"), std::string::npos) << rank0;
}

INSTANTIATE_TEST_SUITE_P(ShardsHoldTheState, LeavingOverKeptShardsTest,
                         ::testing::Values(ShardsHoldingTheState{"staleness", 1, 0},
                                           ShardsHoldingTheState{"async", kAsyncStaleness, 0},
                                           ShardsHoldingTheState{"backup_workers", 0, 1}),
                         [](const ::testing::TestParamInfo<ShardsHoldingTheState>& info) {
                           return std::string(info.param.name);
                         });

// Issue 48 point 6: the hand-over's job under bounded staleness, with checkpoints (every 10
// steps) to fall back to when a hand-over does not happen. The controller accepts a checkpoint
// once a heartbeat accounts for its step, so heartbeats come every 5 s here (the timeout 15 s:
// none of these tests waits for it). Every worker holds at step 100 for the generation the leave
// brings, so the job cannot finish before the first checkpoint is accepted, however fast it runs.
launch::LocalClusterOptions HandOverJob(const std::string& dir) {
  launch::LocalClusterOptions options = LeaveJob(dir, 3, 2, SyncMode::kPs);
  options.heartbeat_timeout = absl::Seconds(15);
  options.training.steps = 1000;
  options.training.staleness = 1;
  options.checkpoint_dir = dir + "/state";
  options.checkpoint_every = 10;
  for (int worker = 0; worker < 3; ++worker) options.flags_of_worker[worker] = {"--hold_at=100"};
  return options;
}

// Waits until the controller has written a checkpoint and the workers trained past it.
void TrainPastACheckpoint(launch::LocalCluster& c) {
  ASSERT_TRUE(Eventually(c, [&] {
    return testing::MetricOf(c.controller(), "ringside_checkpoints_total", {{"what", "written"}}) >=
               1 &&
           Metric(*c.workers()[0], "ringside_steps_total", {{"mode", "ps"}}) >= 30;
  }));
}

// The job ends whole after a hand-over that did not happen: worker-0 took the newest checkpoint
// for the departed range (as for a crashed shard), and nobody waited for the heartbeat timeout
// (ten minutes here).
void ExpectTheCheckpointTakesOver(launch::LocalCluster& c, const TrainingOptions& training) {
  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), 3u);
  for (const TrainResultFile& result : *results) EXPECT_EQ(result.steps, training.steps);
  EXPECT_NE(LogOf(*c.workers()[0]).find("falling back to the controller's checkpoint of step"),
            std::string::npos)
      << LogOf(*c.workers()[0]);
}

// SIGKILL at each point of a shard's leave: the controller took the leave, so the job regroups at
// once (one regroup), and the range the shard did not hand over comes from the checkpoint.
class KilledInTheLeaveTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KilledInTheLeaveTest, AShardKilledInItsLeaveLeavesTheJobToTheCheckpoint) {
  auto dir = launch::TempDir::Create("ringside-leave-fault-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = HandOverJob(dir->path());
  options.flags_of_shard[1] = {absl::StrCat("--fault_at=", GetParam())};
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  ASSERT_NO_FATAL_FAILURE(TrainPastACheckpoint(c));
  launch::ClusterProcess& shard = Named(c, "ps-1");
  shard.expected_to_end = true;
  ASSERT_EQ(kill(shard.process.pid(), SIGTERM), 0);
  auto exited = shard.process.Wait(absl::Seconds(120));
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(exited->signal, SIGKILL) << exited->ToString() << "\n" << LogOf(shard);
  EXPECT_NE(LogOf(shard).find("left the job, which goes on in generation 2"), std::string::npos)
      << LogOf(shard);
  ExpectTheCheckpointTakesOver(c, options.training);
  EXPECT_EQ(Metric(c.controller(), "ringside_generation"), 2) << "exactly one regroup";
}

INSTANTIATE_TEST_SUITE_P(LeavePoints, KilledInTheLeaveTest,
                         ::testing::Values("leave_sent", "handover"));

// A second SIGTERM while the shard waits to hand over (worker-0 stopped, so nobody reads yet)
// ends the wait: the shard exits 0 saying so, and the job takes the checkpoint for its range.
TEST(ElasticClusterTest, ASecondSignalEndsAShardsHandOver) {
  auto dir = launch::TempDir::Create("ringside-leave-twice-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options = HandOverJob(dir->path());
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  ASSERT_NO_FATAL_FAILURE(TrainPastACheckpoint(c));
  launch::ClusterProcess& rank0 = *c.workers()[0];
  ASSERT_EQ(kill(rank0.process.pid(), SIGSTOP), 0);
  absl::Cleanup resume = [&] { kill(rank0.process.pid(), SIGCONT); };
  launch::ClusterProcess& shard = Named(c, "ps-1");
  shard.expected_to_end = true;
  ASSERT_EQ(kill(shard.process.pid(), SIGTERM), 0);
  ASSERT_TRUE(Eventually(c, [&] {
    return LogOf(shard).find("ps: handing over its range's state") != std::string::npos;
  })) << LogOf(shard);
  ASSERT_EQ(kill(shard.process.pid(), SIGTERM), 0);
  auto exited = shard.process.Wait(absl::Seconds(120));
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_TRUE(exited->ok()) << exited->ToString() << "\n" << LogOf(shard);
  EXPECT_NE(LogOf(shard).find("a second signal ended the hand-over"), std::string::npos)
      << LogOf(shard);
  std::move(resume).Invoke();
  ExpectTheCheckpointTakesOver(c, options.training);
}

// Two members leaving in the same step (a worker and a shard, synchronous ps: the workers hold
// the state) each leave; the job regroups without them and ends with the reference.
TEST(ElasticClusterTest, AWorkerAndAShardLeavingTogetherLoseNothing) {
  auto dir = launch::TempDir::Create("ringside-leave-two-");
  ASSERT_TRUE(dir.ok());
  const launch::LocalClusterOptions options = LeaveJob(dir->path(), 3, 2, SyncMode::kPs);
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  ASSERT_NO_FATAL_FAILURE(TrainPast30Steps(c));
  std::vector<launch::ClusterProcess*> leavers = {c.workers()[2], &Named(c, "ps-1")};
  for (launch::ClusterProcess* leaver : leavers) {
    leaver->expected_to_end = true;
    ASSERT_EQ(kill(leaver->process.pid(), SIGTERM), 0);
  }
  for (launch::ClusterProcess* leaver : leavers) {
    auto exited = leaver->process.Wait(absl::Seconds(120));
    ASSERT_TRUE(exited.ok()) << exited.status();
    EXPECT_TRUE(exited->ok()) << exited->ToString() << "\n" << LogOf(*leaver);
    EXPECT_NE(LogOf(*leaver).find("left the job, which goes on in generation"), std::string::npos)
        << LogOf(*leaver);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectEveryWorkerFinishedAlike(c, options.training, 2u));
  EXPECT_LE(Metric(c.controller(), "ringside_generation"), 3) << "a generation per leave at most";
  auto reference = worker::TrainLocally(options.training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const std::vector<float> params = ReadParams(c.workers()[0]->params_file);
  ASSERT_EQ(params.size(), reference->parameters.size());
  EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5);
}

// A worker killed once the controller took its leave (before it exits) changes nothing: the
// others regrouped already, once, and end with the reference.
TEST(ElasticClusterTest, AWorkerKilledAfterItsLeaveChangesNothing) {
  auto dir = launch::TempDir::Create("ringside-leave-killed-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = LeaveJob(dir->path(), 3, 0, SyncMode::kRing);
  options.flags_of_worker[2] = {"--fault_at=leave_sent"};
  auto cluster = launch::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& leaver = *c.workers()[2];
  ASSERT_TRUE(Eventually(c, [&] {
    return Metric(leaver, "ringside_steps_total", {{"mode", "ring"}}) >= 30;
  }));
  leaver.expected_to_end = true;
  ASSERT_EQ(kill(leaver.process.pid(), SIGTERM), 0);
  auto exited = leaver.process.Wait(absl::Seconds(120));
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(exited->signal, SIGKILL) << exited->ToString() << "\n" << LogOf(leaver);
  EXPECT_NE(LogOf(leaver).find("left the job, which goes on in generation 2"), std::string::npos)
      << LogOf(leaver);
  ExpectOneRegroupAndTheReference(c, options.training, 2);
}

INSTANTIATE_TEST_SUITE_P(BothModes, LeavingWorkerTest,
                         ::testing::Values(SyncMode::kRing, SyncMode::kPs),
                         [](const ::testing::TestParamInfo<SyncMode>& info) {
                           return std::string(SyncModeName(info.param));
                         });

}  // namespace
}  // namespace ringside
