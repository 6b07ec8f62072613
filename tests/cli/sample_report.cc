#include "tests/cli/sample_report.h"

#include "common/cost_model.h"

namespace ringside::cli::testing {
namespace {

// Every link of a ring of `config.workers` and of the PS with `config.ps_shards` shards, at
// exactly the model's bytes.
void FillLinks(const JobConfig& config, ModeReport& ring, ModeReport& ps) {
  const auto k = static_cast<uint64_t>(config.parameters);
  for (int r = 0; r < config.workers; ++r) {
    const double bytes = RingElementsSentByRank(k, config.workers, r) * 4.0;
    ring.links.push_back({WorkerName(r), WorkerName((r + 1) % config.workers), bytes, bytes});
  }
  for (int r = 0; r < config.workers; ++r) {
    for (int s = 0; s < config.ps_shards; ++s) {
      const double bytes = PsElementsPerShardLink(k, config.ps_shards, s) * 4.0;
      ps.links.push_back({WorkerName(r), PsShardName(s), bytes, bytes});
      ps.links.push_back({PsShardName(s), WorkerName(r), bytes, bytes});
    }
  }
}

ModeReport Completed(SyncMode mode, int64_t steps, int world) {
  ModeReport m;
  m.mode = mode;
  m.completed = true;
  m.steps = steps;
  m.final_world = world;
  return m;
}

}  // namespace

std::vector<double> StepTimes(double median, double spread, int count) {
  std::vector<double> steps;
  for (int i = 0; i < count; ++i) {
    const int rank = (i * 37) % count;  // 37 is prime to the counts used: each rank once
    steps.push_back(median * (1 + spread * (static_cast<double>(rank) / (count - 1) - 0.5)));
  }
  return steps;
}

JobComparison SyntheticJob() {
  JobComparison job;
  job.config = {4, 2, "784,1024,1024,10", "synthetic:4096", "adam", "cpu", 1863690, 100, 64, 1};
  job.ring = Completed(SyncMode::kRing, 100, 4);
  job.ps = Completed(SyncMode::kPs, 100, 4);
  FillLinks(job.config, job.ring, job.ps);

  // Ring: rank 0 sends 2K - |c1| - |c2| = 2,795,535 elements; rank 1 the most (2,795,536),
  // so worker-2 receives the most.
  job.ring.bytes_per_worker_per_step = job.ring.expected_bytes_per_worker_per_step = 11182140;
  job.ring.busiest_node = "worker-2";
  job.ring.busiest_node_bytes_per_step = job.ring.busiest_node_expected_bytes_per_step = 11182144;
  job.ring.step_p50 = 0.210;
  job.ring.step_p95 = 0.260;
  job.ring.step_seconds = StepTimes(0.210, 0.2, 95);
  job.ring.warmup_steps = 5;
  job.ring.warmup_seconds = 2.5;
  job.ring.phases = {0.080, 0.120, 0.010};
  job.ring.sync_share = 0.120 / 0.210;
  job.ring.samples_per_second = 301.2;
  job.ring.final_loss = 0.3412;
  job.ring.accuracy = 0.912;

  // PS: K·4 per worker; each shard takes N·K/S·4 = 14,909,520.
  job.ps.bytes_per_worker_per_step = job.ps.expected_bytes_per_worker_per_step = 7454760;
  job.ps.busiest_node = "ps-0";
  job.ps.busiest_node_bytes_per_step = job.ps.busiest_node_expected_bytes_per_step = 14909520;
  job.ps.step_p50 = 0.350;
  job.ps.step_p95 = 0.420;
  job.ps.step_seconds = StepTimes(0.350, 0.2, 95);
  job.ps.warmup_steps = 5;
  job.ps.warmup_seconds = 3.1;
  job.ps.phases = {0.082, 0.262, 0.001};
  job.ps.sync_share = 0.262 / 0.345;
  job.ps.samples_per_second = 180.5;
  job.ps.final_loss = 0.3412;
  job.ps.accuracy = 0.912;
  // Loss against seconds since each cluster started: the ring reaches the same loss sooner.
  job.ring.loss_over_time = {{2.0, 0, 2.31}, {6.2, 20, 0.92}, {10.5, 49, 0.3412}};
  job.ps.loss_over_time = {{2.4, 0, 2.31}, {9.4, 20, 0.92}, {17.7, 49, 0.3412}};
  job.ring.first_step_start_seconds = 1.79;  // step 0 ended at 2.0 s, 210 ms long
  job.ps.first_step_start_seconds = 2.05;

  // Memory: 4 K floats + 64 MiB = 96,929,200 B for a worker, 3 of K/2 + 64 MiB for a shard.
  job.config.worker_memory_bound_bytes = 96927904;
  job.config.shard_memory_bound_bytes = 78291004;
  job.ring.processes = {{"controller", 21 << 20},
                        {"ps-0", 20 << 20},
                        {"worker-0", 120 << 20},
                        {"worker-1", 126 << 20}};
  job.ps.processes = {
      {"controller", 21 << 20}, {"ps-0", 130 << 20}, {"ps-1", 110 << 20}, {"worker-0", 92 << 20}};

  job.parity_checked = true;
  job.max_abs_param_diff = 2.4e-7;
  job.max_rel_param_diff = 3.1e-7;
  return job;
}

JobComparison IrisJobWithLostWorker() {
  JobComparison job;
  job.config = {4, 2, "4,16,3", "iris", "adam", "cpu", 131, 200, 32, 1};
  job.ring = Completed(SyncMode::kRing, 200, 3);
  job.ps = Completed(SyncMode::kPs, 200, 4);
  FillLinks(job.config, job.ring, job.ps);
  job.ring.events = {"worker-3 exited (killed by signal 9) at ~step 40; continued with 3 workers"};

  job.ring.bytes_per_worker_per_step = job.ring.expected_bytes_per_worker_per_step = 784;
  job.ring.busiest_node = "worker-2";
  job.ring.busiest_node_bytes_per_step = job.ring.busiest_node_expected_bytes_per_step = 788;
  job.ring.step_p50 = 0.0021;
  job.ring.step_p95 = 0.0048;
  job.ring.step_seconds = StepTimes(0.0021, 0.4, 195);
  job.ring.phases = {0.0004, 0.0016, 0.0001};
  job.ring.sync_share = 0.0016 / 0.0021;
  job.ring.samples_per_second = 15238;
  job.ring.final_loss = 0.0571;
  job.ring.accuracy = 0.9733;

  job.ps.bytes_per_worker_per_step = job.ps.expected_bytes_per_worker_per_step = 524;
  job.ps.busiest_node = "ps-0";
  job.ps.busiest_node_bytes_per_step = job.ps.busiest_node_expected_bytes_per_step = 1056;
  job.ps.step_p50 = 0.0016;
  job.ps.step_p95 = 0.0031;
  job.ps.step_seconds = StepTimes(0.0016, 0.4, 195);
  job.ps.phases = {0.0004, 0.0011, 0.0001};
  job.ps.sync_share = 0.0011 / 0.0016;
  job.ps.samples_per_second = 20000;
  job.ps.final_loss = 0.0571;
  job.ps.accuracy = 0.9733;
  job.ring.loss_over_time = {{1.1, 0, 1.10}, {1.3, 100, 0.21}, {1.5, 199, 0.0571}};
  job.ps.loss_over_time = {{1.2, 0, 1.10}, {1.4, 100, 0.21}, {1.6, 199, 0.0571}};
  job.ring.first_step_start_seconds = 1.0979;
  job.ps.first_step_start_seconds = 1.1984;

  job.parity_checked = true;
  job.max_abs_param_diff = 1.2e-7;
  job.max_rel_param_diff = 2.5e-7;
  return job;
}

CompareReport SampleReport() { return {{SyntheticJob(), IrisJobWithLostWorker()}}; }

JobComparison FashionMnistJob() {
  JobComparison job = SyntheticJob();
  job.config.data = "fashion-mnist";
  job.config.steps = 300;
  job.config.has_test_set = true;
  job.config.eval_every = 25;
  job.config.target_accuracy = 0.75;
  job.ring.steps = job.ps.steps = 300;
  // Every 25 steps; the ring's steps are faster, so it reaches each accuracy sooner.
  const double accuracy[] = {0.09, 0.55, 0.66, 0.71, 0.73, 0.74, 0.76,
                             0.74, 0.78, 0.77, 0.80, 0.79, 0.81};
  for (int i = 0; i <= 12; ++i) {
    const int64_t step = 25 * i;
    job.ring.accuracy_over_time.push_back({step, 2.0 * i, accuracy[i], 2.3 / (1 + i)});
    job.ps.accuracy_over_time.push_back({step, 20.0 / 6 * i, accuracy[i], 2.3 / (1 + i)});
  }
  job.ring.eval_seconds_mean = 1.25;
  job.ps.eval_seconds_mean = 1.5;
  job.ring.test_accuracy = job.ps.test_accuracy = 0.81;
  job.ring.accuracy = job.ps.accuracy = 0.81;
  job.ring.test_accuracy_recent = job.ps.test_accuracy_recent = 0.79;
  job.ring.recent_evaluations = job.ps.recent_evaluations = 5;
  job.ring.seconds_to_target = 12.0;
  job.ps.seconds_to_target = 20.0;
  job.ring.steps_to_target = job.ps.steps_to_target = 150;
  return job;
}

}  // namespace ringside::cli::testing
