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
  job.ps.phases = {0.082, 0.262, 0.001};
  job.ps.sync_share = 0.262 / 0.345;
  job.ps.samples_per_second = 180.5;
  job.ps.final_loss = 0.3412;
  job.ps.accuracy = 0.912;
  // Loss against seconds since each cluster started: the ring reaches the same loss sooner.
  job.ring.loss_over_time = {{2.0, 0, 2.31}, {6.2, 20, 0.92}, {10.5, 49, 0.3412}};
  job.ps.loss_over_time = {{2.4, 0, 2.31}, {9.4, 20, 0.92}, {17.7, 49, 0.3412}};

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
  job.ps.phases = {0.0004, 0.0011, 0.0001};
  job.ps.sync_share = 0.0011 / 0.0016;
  job.ps.samples_per_second = 20000;
  job.ps.final_loss = 0.0571;
  job.ps.accuracy = 0.9733;
  job.ring.loss_over_time = {{1.1, 0, 1.10}, {1.3, 100, 0.21}, {1.5, 199, 0.0571}};
  job.ps.loss_over_time = {{1.2, 0, 1.10}, {1.4, 100, 0.21}, {1.6, 199, 0.0571}};

  job.parity_checked = true;
  job.max_abs_param_diff = 1.2e-7;
  job.max_rel_param_diff = 2.5e-7;
  return job;
}

CompareReport SampleReport() { return {{SyntheticJob(), IrisJobWithLostWorker()}}; }

}  // namespace ringside::cli::testing
