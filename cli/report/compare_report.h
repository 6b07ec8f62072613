// What `ringside compare` measured, and the two text renderings of it: the side-by-side table
// for a terminal and the `--json` document of docs/contract.md. (The HTML page is in
// cli/report/report_html.h.)
//
// The orchestration fills a `CompareReport` (one `JobComparison` per job, e.g. the synthetic
// communication-heavy model and Iris); nothing here starts processes or reads metrics. Every
// byte figure is payload bytes per synchronous step, as `ringside_link_*` counts them; every
// time is seconds.
//
// Ownership: plain values. Thread-safety: the functions are pure (they read their arguments
// only) and may run concurrently. Errors: the renderers cannot fail (a failed mode is rendered
// as failed); the file writers return WriteFileAtomically's status.
#ifndef RINGSIDE_CLI_REPORT_COMPARE_REPORT_H_
#define RINGSIDE_CLI_REPORT_COMPARE_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/metrics.h"
#include "nlohmann/json.hpp"

namespace ringside::cli {

// One directed link, src -> dst (node names per docs/contract.md: "worker-0", "ps-1").
struct LinkTraffic {
  std::string src, dst;
  double bytes_per_step = 0, expected_bytes_per_step = 0;
};

// Mean seconds per step spent in each phase (compute, sync, update), as the step loop times
// them for `ringside_step_seconds` and the step trace.
struct PhaseSeconds {
  double compute = 0, sync = 0, update = 0;
};

// One process of the run's cluster and its peak resident memory (ru_maxrss when it was reaped).
struct ProcessMemory {
  std::string name;  // node name: "controller", "ps-0", "worker-2"
  int64_t peak_rss_bytes = 0;
};

// A process of the run's cluster that ended without being asked to (a lost worker, a dead
// shard or controller): how it ended and what its log said last, so the failure explains itself.
// The cluster's directory, and so the log, is kept after such a run.
struct ProcessFailure {
  std::string name;  // node name: "worker-0"
  int64_t pid = 0;
  std::string exit;                     // "exit code 1", "killed by signal 9 (SIGKILL)"
  std::string log;                      // the path of its whole log
  std::vector<std::string> last_lines;  // its log's last lines, each quoted, escaped and cut
};

// One step's loss on the first worker, `seconds` after its cluster was started (process
// start-up and the first regroup included: wall-clock time to a loss, as a user waits for it).
struct LossPoint {
  double seconds = 0;
  int64_t step = 0;
  double loss = 0;
};

// One evaluation of the job's parameters on the data's held-out test set by rank 0's evaluator
// (worker/accuracy_evaluator.h), `seconds` after the cluster's first step began (when the evaluated
// step ended; the evaluation itself runs off the training path).
struct AccuracyPoint {
  int64_t step = 0;  // steps the evaluated parameters had completed (0: the initial ones)
  double seconds = 0;
  double test_accuracy = 0;  // in [0, 1]
  double loss = 0;           // the training loss of that step (rank 0's batch)
  // The payload bytes the evaluating worker had sent on its links by the end of that step
  // (ringside_link_bytes_total summed over the job, one worker's: every worker sends as much in
  // a synchronous step); unset where the worker did not record it.
  std::optional<int64_t> sent_bytes = std::nullopt;
};

// One cluster size of a `--workers=1,2,4,8` sweep (cli/scaling_sweep.h fills the efficiency
// and the model).
struct ScalingPoint {
  int workers = 0, ps_shards = 0;
  bool completed = false;
  double samples_per_second = 0;
  // samples/s(N) ÷ (N/N0 × samples/s(N0)), N0 the sweep's baseline (1 when swept); 0 when not
  // completed.
  double efficiency = 0;
  double step_p50 = 0;
  std::optional<double> wire_relative_error;  // ModeReport's at this N: how it grows with N
  PhaseSeconds phases;                        // measured means
  // compute + sync + update means: what the model is compared with (samples/s is batch ÷ it).
  double step_mean = 0;
  // The model's step time at N: compute(N0)·N0/N + update(N0) + the busiest node's bytes at N ÷
  // `model_bytes_per_second` of the mode's sweep.
  PhaseSeconds model;
  double model_step_seconds = 0;
};

struct ModeReport {
  SyncMode mode = SyncMode::kRing;
  // ps mode under `ringside compare --ps_variants`: the variant's name ("staleness=2",
  // "sync/no_straggler"); a --compression_variants run: its codec ("randomk:0.01"); empty
  // otherwise.
  std::string variant;
  // The run's --compression ("none" for the job as given without one).
  std::string compression = "none";
  bool completed = false;  // false: the run failed; `failure` says why
  std::string failure;
  int64_t steps = 0;
  // Sent by one worker per step.
  double bytes_per_worker_per_step = 0, expected_bytes_per_worker_per_step = 0;
  // The node with the most payload arriving per step: in ps mode a shard (N·|range s|), or a
  // worker when S > N; in ring mode a worker, whose incoming ring link carries ~2(N-1)K/N.
  // (cli/report/model_prediction.h computes the model's figure and name.)
  std::string busiest_node;  // e.g. "ps-0" (ingress) or "worker-0" (ring link)
  double busiest_node_bytes_per_step = 0, busiest_node_expected_bytes_per_step = 0;
  double step_p50 = 0, step_p95 = 0;  // seconds per whole step
  // worker-0's sync phase per step (its step trace): median and fastest, in seconds.
  double sync_p50 = 0, sync_min = 0;
  // worker-0's compute phase per step, median, in seconds (its step trace).
  double compute_p50 = 0;
  // --bucket_bytes: the median over worker-0's steps of the share of the step during which its
  // sync ran at the same time as its compute (StepTraceLine::overlap_seconds / seconds); 0
  // without overlap.
  double overlap_share = 0;
  // `ringside lab`: the cost model's sync time per step at the links' rates (common/cost_model.h,
  // FindSyncBottleneck); 0 outside the lab. What it waits for: the node whose link drains last
  // and one line saying so with its bytes and rate (cli/lab_bound.h); empty outside the lab.
  double bound_seconds_per_step = 0;
  std::string bottleneck_node, bottleneck;
  // `--probe=FILE`: the step model's step and sync seconds for this run (cli/compare_prediction.h),
  // beside the measured step_p50 and sync_p50; 0 without a probe or for a run it does not model.
  double predicted_step_seconds = 0, predicted_sync_seconds = 0;
  // ps with one shard beside each worker (--colocate, S = N).
  bool colocated = false;
  // Like step_p50, the sync and compute medians and overlap_share above, these have one
  // definition: worker-0's step trace (the first live worker's; cli/report/step_figures.h).
  PhaseSeconds phases;            // worker-0's mean per step
  double sync_share = 0;          // phases: sync / (compute + sync + update)
  double samples_per_second = 0;  // batch × worker-0's steps ÷ their total seconds
  // The per-step figures above leave out worker-0's first `warmup_steps` steps (connections,
  // first allocations, caches: start-up, not the steady state), whose total is reported apart;
  // `step_seconds` holds every step that is in them, in step order: what the verdict's interval
  // resamples when each mode ran once (cli/report/spread.h).
  int64_t warmup_steps = 0;
  double warmup_seconds = 0;
  std::vector<double> step_seconds;
  // Every worker's gradient of a step is in that step's sum (ring; ps without --staleness or
  // --backup_workers): ring and ps then compute the same sums and take the same steps to a
  // target accuracy.
  bool synchronous = true;
  // --straggler as given ("worker-3:4"), empty: none (a `/no_straggler` variant has none).
  std::string straggler;
  double final_loss = 0, accuracy = 0;  // accuracy in [0, 1]
  // A 16-bit wire dtype's error (ring/wire_error.h): the largest relative L2 error of a sampled
  // step's synchronised gradient against the exact float32 sum of the same shares, over every
  // worker; unset when nothing was sampled (fp32 on the wire, or no ring to sum on).
  std::optional<double> wire_relative_error;
  int64_t wire_error_samples = 0;  // steps sampled (worker-0's count)
  std::vector<LinkTraffic> links;
  int final_world = 0;              // workers at the end (fewer if one was lost)
  std::vector<std::string> events;  // e.g. "worker-3 exited (killed) at ~step 40; continued..."
  std::vector<ProcessMemory> processes;          // every process the run started, in start order
  std::vector<ProcessFailure> process_failures;  // in the order they were seen (also if failed)
  std::vector<LossPoint> loss_over_time;         // at most kMaxLossPoints, evenly thinned
  // When the first worker's first traced step began, on loss_over_time's clock (seconds since
  // the cluster was started): the loss chart's origin, so start-up is not drawn. 0: not traced.
  double first_step_start_seconds = 0;
  // Data with a held-out test set only: every evaluation, in step order, and one evaluation's
  // mean own time (on the evaluator's thread, in no step's phases nor in samples/s).
  std::vector<AccuracyPoint> accuracy_over_time;
  double eval_seconds_mean = 0;
  // What the evaluations give (cli/report/accuracy_summary.h; unset: nothing measured). A single
  // evaluation is noisy by a few points at small batches, hence the mean of the last few.
  std::optional<double> test_accuracy;         // the last evaluation's: the final parameters'
  std::optional<double> test_accuracy_recent;  // mean of the last `recent_evaluations`
  int recent_evaluations = 0;
  // The first evaluation at or above the job's target accuracy: when its step ended (seconds
  // since the first step) and that step. Unset: not reached (or not measured).
  std::optional<double> seconds_to_target;
  std::optional<int64_t> steps_to_target;
  // That evaluation's sent_bytes: what one worker had sent when the target was first reached.
  // Unset where not reached or not recorded.
  std::optional<int64_t> bytes_to_target;
  // A sweep's points in sweep order (empty: no sweep); the rest of this report is one of them.
  std::vector<ScalingPoint> scaling;
  int scaling_baseline_workers = 0;
  // The bandwidth the sweep's model divides bytes by: the link rate where one is set, else
  // calibrated at the smallest swept N with traffic (sync time ÷ bytes); 0: none.
  double model_bytes_per_second = 0;
  int model_calibrated_at = 0;  // the N calibrated at; 0: a link rate was given
  // --repeats=R, R >= 2: every run of this mode, in run order (each with empty `repeats`), and
  // this report is their summary (cli/report/repeats.h): each scalar figure the median over
  // the runs, the curves and links those of the run with the median step time. Empty: one run,
  // and this report is it.
  std::vector<ModeReport> repeats;
};

inline constexpr size_t kMaxLossPoints = 400;

struct JobConfig {
  int workers = 0, ps_shards = 0;
  std::string model, data, optimizer, device;
  int64_t parameters = 0, steps = 0, batch_size = 0;
  uint64_t seed = 0;
  int element_bytes = 4;            // of the wire dtype: what the cost model multiplies counts by
  std::string wire_dtype = "fp32";  // --wire_dtype: how gradients travel (sums in float32)
  // --bucket_bytes (0: off), and the elements of each ring allreduce of a step it gives (the
  // buckets of worker/gradient_buckets.h; one of every parameter without): the cost model's.
  uint64_t bucket_bytes = 0;
  std::vector<uint64_t> ring_buckets = {};
  uint64_t ps_window_bytes = 0;  // the workers' push window in ps mode
  std::string link_rate = {};    // `ringside lab --link_rate` as given; empty on loopback
  int64_t link_burst_bytes = 0;  // the lab shapers' tbf burst
  std::map<std::string, std::string> slow_links = {};  // --slow_link: host -> its rate as given
  // The data has a held-out test set (Fashion-MNIST): rank 0 evaluates on it every
  // `eval_every` steps, and `target_accuracy` (in (0, 1]) is the accuracy timed to.
  bool has_test_set = false;
  int64_t eval_every = 0;
  double target_accuracy = 0;
  // Issue 26's memory goal for each process kind (cli/report/model_prediction.h,
  // PredictMemoryBound).
  int64_t worker_memory_bound_bytes = 0, shard_memory_bound_bytes = 0;
  // --repeats: each mode's runs (alternated: ring, ps, ring, ps, ...).
  int repeats = 1;
};

struct JobComparison {
  JobConfig config;
  // With --ps_variants, `ps` is the first variant's run and `ps_variants` every variant's, in
  // the order listed (cli/ps_variants.h); without, `ps_variants` is empty.
  ModeReport ring, ps;
  std::vector<ModeReport> ps_variants;
  // --compression_variants: a run per codec and mode it fits, in the order listed, each mode's
  // in the order the modes run (cli/compression_variants.h); empty without.
  std::vector<ModeReport> compression_variants;
  // --colocate: ps once more with one shard beside each worker (S = N); JSON modes.ps_colocated.
  std::optional<ModeReport> ps_colocated;
  double max_abs_param_diff = 0, max_rel_param_diff = 0;
  bool parity_checked = false;
};

struct CompareReport {
  std::vector<JobComparison> jobs;
};

// The side-by-side table of one job, the winner line and the cost model's explanation with this
// job's numbers, then its events. UTF-8 box drawing, no colours.
void PrintComparisonTable(const JobComparison& job, std::ostream& out);

// docs/contract.md's `ringside compare --json`: `config`, `modes.ring`, `modes.ps`, `parity` and
// `winner` describe jobs[0] at the top level, and `jobs` holds the same object for every job.
nlohmann::json CompareJson(const CompareReport& report);
nlohmann::json JobJson(const JobComparison& job);

// CompareJson(report) pretty-printed, written atomically.
absl::Status WriteCompareJsonFile(const CompareReport& report, const std::string& path);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_COMPARE_REPORT_H_
