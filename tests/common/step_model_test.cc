// The step model's terms against hand-computed cases (common/step_model.h). K = 1000 float32
// parameters on N = 4 workers: every chunk and range is whole, so each figure below is exact.
#include "common/step_model.h"

#include "gtest/gtest.h"

namespace ringside {
namespace {

// 1 MB/s links, α = 0.5 ms, 0.1 ms per sample, 1 ns of CPU per byte, a core per process.
ClusterCosts Costs() {
  ClusterCosts costs;
  costs.link_bytes_per_second = 1e6;
  costs.link_latency_seconds = 5e-4;
  costs.compute_seconds_per_sample = 1e-4;
  costs.sync_cpu_seconds_per_byte = 1e-9;
  return costs;
}
PlanJob Job() { return {.parameters = 1000, .element_bytes = 4, .global_batch = 64}; }
PlanCluster Cluster(int shards = 4) { return {.workers = 4, .shards = shards}; }

StepPrediction Predict(PlanMode mode, const PlanJob& job, const PlanCluster& cluster,
                       const ClusterCosts& costs = Costs()) {
  absl::StatusOr<StepPrediction> p = PredictStep(mode, job, cluster, costs);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : StepPrediction{};
}

TEST(StepModelTest, RingIsRoundsOfAlphaPlusItsLinkBytes) {
  const StepPrediction p = Predict(PlanMode::kRing, Job(), Cluster());
  EXPECT_DOUBLE_EQ(p.compute_seconds, 16 * 1e-4);  // 64/4 samples
  EXPECT_EQ(p.busiest_bytes, 1500u * 4);           // 2(N-1)/N·K elements
  EXPECT_DOUBLE_EQ(p.wire_seconds, 6000 / 1e6);
  EXPECT_DOUBLE_EQ(p.latency_seconds, 6 * 5e-4);     // 2(N-1) rounds
  EXPECT_DOUBLE_EQ(p.cpu_seconds, 2 * 6000 * 1e-9);  // sent and received
  EXPECT_DOUBLE_EQ(p.sync_seconds, 3e-3 + 6e-3);
  EXPECT_DOUBLE_EQ(p.step_seconds, 1.6e-3 + 9e-3);
  EXPECT_DOUBLE_EQ(p.samples_per_second, 64 / 10.6e-3);
  EXPECT_EQ(p.dominant_term, "ring link 2(N−1)/N·K");
}

TEST(StepModelTest, PsIsItsShardIngressAndTwoRounds) {
  // S = 2: a shard receives N·K/S = 2000 elements, more than a worker's K.
  const StepPrediction two = Predict(PlanMode::kPs, Job(), Cluster(2));
  EXPECT_EQ(two.busiest_bytes, 2000u * 4);
  EXPECT_DOUBLE_EQ(two.latency_seconds, 2 * 5e-4);
  EXPECT_DOUBLE_EQ(two.sync_seconds, 1e-3 + 8e-3);
  EXPECT_EQ(two.sync_term, "shard ingress N·K/S");
  // S = 8 > N: the worker's own K is the busiest link.
  const StepPrediction eight = Predict(PlanMode::kPs, Job(), Cluster(8));
  EXPECT_EQ(eight.busiest_bytes, 1000u * 4);
  EXPECT_EQ(eight.sync_term, "worker link K");
}

TEST(StepModelTest, ShardServiceRateCanBeTheSyncTerm) {
  ClusterCosts costs = Costs();
  costs.shard_bytes_per_second = 5e5;  // 4000 bytes of ingress at S = 4 take 8 ms
  const StepPrediction p = Predict(PlanMode::kPs, Job(), Cluster(4), costs);
  EXPECT_DOUBLE_EQ(p.shard_seconds, 4000 / 5e5);
  EXPECT_DOUBLE_EQ(p.sync_seconds, 1e-3 + 8e-3);
  EXPECT_EQ(p.sync_term, "shard sum rate");
}

TEST(StepModelTest, ColocatedPsCarriesTheRingsBytesInTwoRounds) {
  const StepPrediction p = Predict(PlanMode::kColocatedPs, Job(), Cluster(1));
  EXPECT_EQ(p.busiest_bytes, 1500u * 4);  // K - K/N out, (N-1)·K/N back
  EXPECT_DOUBLE_EQ(p.sync_seconds, 1e-3 + 6e-3);
  EXPECT_EQ(p.sync_term, "host link 2(N−1)/N·K");
}

// A shard answers a push segment once every push of it is in: the first segment's arrival and
// the last one's reply add 2 × pushes × segment to the shard's link, at most the whole range
// (pushed whole, then answered whole); the colocated shard's own worker pushes over no link;
// staleness has no barrier and pays none.
TEST(StepModelTest, PsPaysItsSegmentPipelinesFillAndDrain) {
  PlanJob job = Job();
  job.ps_segment_bytes = 400;  // 100 elements
  const StepPrediction ps = Predict(PlanMode::kPs, job, Cluster(2));
  EXPECT_DOUBLE_EQ(ps.pipeline_seconds, 2 * 4 * 400 / 1e6);
  EXPECT_DOUBLE_EQ(ps.sync_seconds, 1e-3 + 8e-3 + 3.2e-3);
  PlanCluster backup = Cluster(2);
  backup.backup_workers = 1;  // the first N - b = 3 pushes
  EXPECT_DOUBLE_EQ(Predict(PlanMode::kPsBackup, job, backup).pipeline_seconds, 2 * 3 * 400 / 1e6);
  // K/N = 250 elements a colocated range: 3 remote pushes of one 100-element segment each way.
  EXPECT_DOUBLE_EQ(Predict(PlanMode::kColocatedPs, job, Cluster(1)).pipeline_seconds,
                   2 * 3 * 400 / 1e6);
  job.ps_segment_bytes = 800;  // two of them longer than a colocated range (1000 bytes)
  EXPECT_DOUBLE_EQ(Predict(PlanMode::kColocatedPs, job, Cluster(1)).pipeline_seconds,
                   3 * 1000 / 1e6);
  EXPECT_EQ(Predict(PlanMode::kPsStaleness, job, Cluster(2)).pipeline_seconds, 0);
  EXPECT_EQ(Predict(PlanMode::kRing, job, Cluster()).pipeline_seconds, 0);
  EXPECT_EQ(Predict(PlanMode::kPs, Job(), Cluster(2)).pipeline_seconds, 0) << "not modelled";
}

TEST(StepModelTest, StragglerSlowsEveryModeButTheBackupWorkers) {
  PlanCluster cluster = Cluster();
  cluster.straggler = 1;
  cluster.straggler_factor = 3;
  EXPECT_DOUBLE_EQ(Predict(PlanMode::kRing, Job(), cluster).compute_seconds, 3 * 1.6e-3);
  EXPECT_DOUBLE_EQ(Predict(PlanMode::kPs, Job(), cluster).compute_seconds, 3 * 1.6e-3);
  const StepPrediction backup = Predict(PlanMode::kPsBackup, Job(), cluster);
  EXPECT_DOUBLE_EQ(backup.compute_seconds, 1.6e-3);
  // The shard waits for N - b = 3 pushes of K/S: less than a worker's K.
  EXPECT_EQ(backup.busiest_bytes, 1000u * 4);
  EXPECT_EQ(backup.sync_term, "worker link K");
  EXPECT_DOUBLE_EQ(backup.step_seconds, 1.6e-3 + 5e-3);
  EXPECT_DOUBLE_EQ(backup.samples_per_second, 48 / 6.6e-3);  // 3 of 4 workers' samples
}

TEST(StepModelTest, StalenessOverlapsTheSyncWithTheNextCompute) {
  PlanCluster cluster = Cluster();
  cluster.straggler = 1;
  cluster.straggler_factor = 3;
  const StepPrediction p = Predict(PlanMode::kPsStaleness, Job(), cluster);
  EXPECT_DOUBLE_EQ(p.compute_seconds, 4.8e-3);
  EXPECT_DOUBLE_EQ(p.sync_seconds, 5e-3);
  EXPECT_DOUBLE_EQ(p.overlap_seconds, 4.8e-3);
  EXPECT_DOUBLE_EQ(p.step_seconds, 5e-3);
}

TEST(StepModelTest, BucketsPayTheirRoundsAndHideSyncBehindTheBackwardPass) {
  PlanJob job = Job();
  job.buckets = 4;
  const StepPrediction p = Predict(PlanMode::kRing, job, Cluster());
  EXPECT_DOUBLE_EQ(p.latency_seconds, 4 * 6 * 5e-4);
  EXPECT_DOUBLE_EQ(p.sync_seconds, 12e-3 + 6e-3);
  EXPECT_DOUBLE_EQ(p.overlap_seconds, 1.6e-3 * 2 / 3);  // less than 3/4 of the sync
  EXPECT_DOUBLE_EQ(p.step_seconds, 1.6e-3 + 18e-3 - 1.6e-3 * 2 / 3);
}

TEST(StepModelTest, SharedCoresSlowEveryCpuTerm) {
  ClusterCosts costs = Costs();
  costs.cores_per_process = 0.5;
  const StepPrediction p = Predict(PlanMode::kRing, Job(), Cluster(), costs);
  EXPECT_DOUBLE_EQ(p.compute_seconds, 2 * 1.6e-3);
  EXPECT_DOUBLE_EQ(p.cpu_seconds, 2 * 2 * 6000 * 1e-9);
}

// Every process on one host of 2 cores (compare, lab): a sample took 1 core, so the batch's 64
// take 64 × 0.1 ms ÷ 2 = 3.2 ms, more than a worker's 16 rows; each process's sync bytes add up
// on the host's cores.
TEST(StepModelTest, ASharedHostAddsEveryProcessOnItsCores) {
  PlanCluster cluster = Cluster(1);
  cluster.shared_host_cores = 2;
  ClusterCosts costs = Costs();
  costs.sync_cpu_seconds_per_byte = 1e-6;  // 1 µs a byte: the host's CPU outlasts the wire
  const StepPrediction ring = Predict(PlanMode::kRing, Job(), cluster, costs);
  EXPECT_DOUBLE_EQ(ring.compute_seconds, 64 * 1e-4 / 2);
  // 2(N−1)·K = 6000 elements sent and as many received, 4 bytes each, over 2 cores; the
  // busiest process alone: 2 × 1500 × 4 bytes.
  EXPECT_DOUBLE_EQ(ring.cpu_seconds, 2 * 6000 * 4 * 1e-6 / 2);
  EXPECT_EQ(ring.sync_term, "the shared host's CPU");
  // ps, S = 1: N·K pushed and N·K answered; the shard alone, 2 × N·K × 4 bytes, is as much.
  const StepPrediction ps = Predict(PlanMode::kPs, Job(), cluster, costs);
  EXPECT_DOUBLE_EQ(ps.cpu_seconds, 2 * 8000 * 4 * 1e-6 / 2);
  EXPECT_EQ(ps.sync_term, "sync CPU");
  // 8 cores: the busiest process's own bytes are the term again, and a worker's rows.
  cluster.shared_host_cores = 8;
  const StepPrediction wide = Predict(PlanMode::kRing, Job(), cluster, costs);
  EXPECT_DOUBLE_EQ(wide.compute_seconds, 16 * 1e-4);
  EXPECT_DOUBLE_EQ(wide.cpu_seconds, 2 * 6000 * 1e-6);
  EXPECT_EQ(wide.sync_term, "sync CPU");
}

TEST(StepModelTest, HalfWidthWireDtypeHalvesTheBytes) {
  PlanJob job = Job();
  job.element_bytes = 2;
  EXPECT_EQ(Predict(PlanMode::kRing, job, Cluster()).busiest_bytes, 1500u * 2);
}

TEST(StepModelTest, TimeToTargetIsStepsTimesStep) {
  PlanJob job = Job();
  job.steps_to_target = 100;
  const StepPrediction p = Predict(PlanMode::kRing, job, Cluster());
  EXPECT_DOUBLE_EQ(p.time_to_target_seconds, 100 * 10.6e-3);
}

TEST(StepModelTest, OneWorkerHasNoSync) {
  PlanCluster one = Cluster(1);
  one.workers = 1;
  const StepPrediction p = Predict(PlanMode::kRing, Job(), one);
  EXPECT_EQ(p.sync_seconds, 0);
  EXPECT_DOUBLE_EQ(p.step_seconds, 64 * 1e-4);
  EXPECT_EQ(p.dominant_term, "compute");
}

TEST(StepModelTest, RanksByTimePerSampleAndNamesTheDecidingTerm) {
  PlanCluster cluster = Cluster();
  cluster.straggler = 1;
  cluster.straggler_factor = 3;
  absl::StatusOr<PlanRanking> ranking = RankModes(Job(), cluster, Costs());
  ASSERT_TRUE(ranking.ok()) << ranking.status();
  ASSERT_EQ(ranking->modes.size(), 5u);
  const PlanMode order[] = {PlanMode::kPsStaleness, PlanMode::kPsBackup, PlanMode::kPs,
                            PlanMode::kColocatedPs, PlanMode::kRing};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ranking->modes[i].mode, order[i]) << i;
  EXPECT_DOUBLE_EQ(ranking->runner_up_margin, (6.6e-3 / 48) / (5e-3 / 64));
  EXPECT_EQ(ranking->deciding_term, "worker link K at 8 Mbit/s");
}

TEST(StepModelTest, ComputeDecidesAgainstAWaitedForStraggler) {
  PlanCluster cluster = Cluster();
  cluster.straggler = 2;
  cluster.straggler_factor = 10;
  ClusterCosts costs = Costs();
  costs.link_bytes_per_second = 1e9;  // sync is negligible: compute decides
  absl::StatusOr<PlanRanking> ranking = RankModes(Job(), cluster, costs);
  ASSERT_TRUE(ranking.ok()) << ranking.status();
  EXPECT_EQ(ranking->modes[0].mode, PlanMode::kPsBackup);
  EXPECT_EQ(ranking->deciding_term, "compute of straggler worker-2 at 10×");
}

TEST(StepModelTest, EqualModesAreATie) {
  // One shard per worker and a ring carry the same bytes; with no latency nor CPU cost they tie.
  ClusterCosts costs = Costs();
  costs.link_latency_seconds = 0;
  costs.sync_cpu_seconds_per_byte = 0;
  PlanCluster cluster = Cluster();
  cluster.backup_workers = 0;
  const StepPrediction ring = Predict(PlanMode::kRing, Job(), cluster, costs);
  const StepPrediction colocated = Predict(PlanMode::kColocatedPs, Job(), cluster, costs);
  EXPECT_DOUBLE_EQ(ring.step_seconds, colocated.step_seconds);
}

TEST(StepModelTest, RefusesAClusterThatCannotExist) {
  struct Case {
    const char* what;
    PlanJob job;
    PlanCluster cluster;
    ClusterCosts costs;
    const char* message;
  };
  ClusterCosts no_rate = Costs();
  no_rate.link_bytes_per_second = 0;
  ClusterCosts no_cores = Costs();
  no_cores.cores_per_process = 0;
  const Case cases[] = {
      {"N = 0", Job(), {.workers = 0, .shards = 1}, Costs(), "N = 0 cannot exist"},
      {"S > K", Job(), {.workers = 4, .shards = 1001}, Costs(), "more than the model's K = 1000"},
      {"S = 0", Job(), {.workers = 4, .shards = 0}, Costs(), "S = 0 cannot exist"},
      {"rate 0", Job(), Cluster(), no_rate, "link rate 0"},
      {"cores 0", Job(), Cluster(), no_cores, "cores per process 0"},
      {"host cores",
       Job(),
       {.workers = 4, .shards = 1, .shared_host_cores = -1},
       Costs(),
       "shared host cores -1"},
      {"straggler",
       Job(),
       {.workers = 4, .shards = 1, .straggler = 4, .straggler_factor = 3},
       Costs(),
       "worker-4 names no worker of 4"},
      {"factor",
       Job(),
       {.workers = 4, .shards = 1, .straggler = 0, .straggler_factor = 0.5},
       Costs(),
       "at least 1"},
      {"batch",
       {.parameters = 1000, .element_bytes = 4, .global_batch = 3},
       Cluster(),
       Costs(),
       "leaves some of N = 4 workers no sample"},
      {"K = 0",
       {.parameters = 0, .element_bytes = 4, .global_batch = 64},
       Cluster(),
       Costs(),
       "no parameters"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StepPrediction> p = PredictStep(PlanMode::kRing, c.job, c.cluster, c.costs);
    ASSERT_FALSE(p.ok()) << c.what;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(p.status().message().find(c.message), absl::string_view::npos)
        << c.what << ": " << p.status();
  }
}

TEST(StepModelTest, FormatsBitRates) {
  EXPECT_EQ(FormatBitRate(10e9 / 8), "10 Gbit/s");
  EXPECT_EQ(FormatBitRate(12.5e6), "100 Mbit/s");
  EXPECT_EQ(FormatBitRate(100), "800 bit/s");
}

}  // namespace
}  // namespace ringside
