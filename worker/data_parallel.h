// Data-parallel training on one worker: the step loop every mode shares. Each step this worker
// takes its slice of the global batch (BatchSchedule::WorkerBatchRows), computes its share of
// the gradient normalised by the *global* batch size (so the SUM over workers is the exact
// global mean), and hands it to a ParameterSync, which turns it into the step's new parameters
// -- the same on every worker. Single-process training is this loop with world = 1 and
// a SumThenUpdate whose sum is the share itself, so there is one loop to trust.
// Thread-compatible. Errors: option parsing (INVALID_ARGUMENT), device set-up, and whatever the
// ParameterSync returns, annotated with the step.
#ifndef RINGSIDE_WORKER_DATA_PARALLEL_H_
#define RINGSIDE_WORKER_DATA_PARALLEL_H_

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <ostream>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/optimizer.h"
#include "common/training_options.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/parameter_sync.h"
#include "worker/timeline.h"
#include "worker/training_result.h"

namespace ringside::worker {

struct WorkerSlot {
  int rank = 0;
  int world = 1;
};

// The most feature bytes of training rows a TrainingJob holds at once where it reads them on
// demand: for the heavy compare job (200 steps, 16 rows of 784 bytes per worker and step) the
// whole job's rows, 2.4 MiB, in one read; a longer job reads its files again every few hundred
// steps (about a quarter of a second each).
inline constexpr int64_t kTrainingWindowBytes = int64_t{8} << 20;

// The rows `slot` uses in steps [first_step, ...): every step's share up to `last_step`
// (exclusive; at least one step), fewer where they would pass `max_bytes` of `row_bytes` each;
// ascending, distinct.
std::vector<int64_t> WindowRows(const BatchSchedule& schedule, WorkerSlot slot, int64_t first_step,
                                int64_t last_step, int64_t row_bytes, int64_t max_bytes);

// A trainer's step metrics, each mode's series resolved once (Metrics::Steps): the first time
// that mode records a step, so a mode's series appear on /metrics when it first runs, as they
// always have; every later step only updates atomics. Null `metrics`: records nothing.
// Thread-compatible (the trainer's thread).
class StepRecorder {
 public:
  explicit StepRecorder(Metrics* metrics) : metrics_(metrics) {}
  // One completed step's phases, count and loss under `mode`.
  void Record(SyncMode mode, absl::Duration compute, const SyncTiming& sync, double loss);

 private:
  Metrics* const metrics_;
  std::optional<StepMetrics> ring_, ps_;
};

// --straggler (benchmarks): how long the worker of `rank` waits after a step's compute of
// `compute`, so that its compute takes `straggler.factor` times as long; zero for other ranks.
absl::Duration StragglerDelay(const Straggler& straggler, int rank, absl::Duration compute);

// One job's model, data, batch schedule and gradient computer: what every step needs, built
// once per worker (a membership change only changes the WorkerSlot).
//
// Memory: where the training set can be read again (Fashion-MNIST), the job holds the features
// of only the rows its slot's next steps use -- a window of at most kTrainingWindowBytes, from
// the step asked for up to the job's last step -- and reads the next window from the files when
// a step or a new slot falls outside it (PrepareRows), so a worker of N holds about 1/N of the
// rows its job's steps touch, never the whole set. Every label stays. Other data is held whole.
// A regroup reads its new slot's window on a thread of its own (PrefetchRows) while the state
// is handed over, since the read (the whole gzip stream inflated) takes longer than a step:
// until PrepareRows takes it, two windows are held.
//
// Thread-safety: one thread calls the methods; the prefetch's thread touches only the files
// and its own window.
class TrainingJob {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingJob>> Create(const TrainingOptions& options);

  const TrainingOptions& options() const { return options_; }
  const ModelSpec& spec() const { return spec_; }
  size_t parameter_count() const { return spec_.parameter_count(); }
  // The data's held-out test set; no rows when it has none. Lives as long as the job.
  const Dataset& test_set() const { return test_; }
  std::vector<float> InitialParameters() const;
  // Makes sure the rows of `slot`'s share of step `step` and of the steps after it (the window)
  // are held, reading them from the data's files when they are not: what a trainer calls where
  // its slot changes (a regroup), so that the read is not in the step's compute time. Nothing to
  // do from the job's last step on.
  absl::Status PrepareRows(int64_t step, WorkerSlot slot);
  // Starts reading the window PrepareRows(step, slot) would read, unless its rows are held,
  // and returns at once. PrepareRows (or the next ComputeShare) waits for it and takes it when
  // it holds the rows asked for then (a regroup may settle on another step than the one
  // guessed here), else reads as ever; a failed read is read again there, its error reported.
  void PrefetchRows(int64_t step, WorkerSlot slot);
  // The training set as held now (tests check which rows it keeps).
  const Dataset& training_set() const { return data_; }
  // The slot's share of step `step`'s gradient, normalised by the global batch (so the sum over
  // the world's shares is the global mean gradient); PrepareRows first when the rows are not
  // held. The straggler (options().straggler) then waits StragglerDelay.
  // `on_layer_ready` (may be null): GradientOptions::on_layer_ready.
  absl::StatusOr<GradientStats> ComputeShare(
      int64_t step, WorkerSlot slot, absl::Span<const float> params, absl::Span<float> gradient,
      const std::function<void(int layer, ElementRange range)>& on_layer_ready = nullptr);
  // Loss and accuracy of `params` on the held-out test set where the data has one, else on the
  // whole training set (in pieces: see EvaluateInChunks).
  absl::StatusOr<Evaluation> Evaluate(absl::Span<const float> params);

 private:
  // Reads the window of `slot`'s rows from step `step` on in place of the one held.
  absl::Status ReadWindow(int64_t step, WorkerSlot slot);
  // The rows of the window read for `slot` from step `step` on.
  std::vector<int64_t> TrainingWindowRows(int64_t step, WorkerSlot slot) const;
  // Makes `rows` (those of `slot`'s step `step`) held: the window held, else the prefetched one
  // if it holds them, else a new read.
  absl::Status HoldRows(int64_t step, WorkerSlot slot, const std::vector<int64_t>& rows);

  TrainingJob(TrainingOptions options, ModelSpec spec, DataSpec data_spec, DataSplits data,
              BatchSchedule schedule, std::unique_ptr<GradientComputer> computer);

  TrainingOptions options_;
  ModelSpec spec_;
  DataSpec data_spec_;
  Dataset data_;  // the training set: every row, or the window's (see the class comment)
  std::future<absl::StatusOr<Dataset>> prefetched_;  // PrefetchRows's read; invalid when none
  Dataset test_;
  BatchSchedule schedule_;
  std::unique_ptr<GradientComputer> computer_;
  OwnedBatch batch_;
};

// A worker's own gradient with a NaN or infinity (a model diverging, an overflow) is never sent
// as it is, as mixed-precision loss scaling skips such a step: TrainStep sends those values as
// zeros (the share's finite rest goes as computed; the step is synchronised as ever, so every
// worker still applies the same sum) and counts them in GradientStats::non_finite. The rule
// after it (NonFiniteSkips): each such step is logged and counted; more than
// kMaxNonFiniteSkips such steps in a row stop the worker with FAILED_PRECONDITION naming the step.
inline constexpr int kMaxNonFiniteSkips = 3;

class NonFiniteSkips {
 public:
  // `skipped` (ringside_nonfinite_refused_total{what="own_gradient"}) and `log` may be null.
  NonFiniteSkips(prometheus::Counter* skipped, std::ostream* log) : skipped_(skipped), log_(log) {}
  // After step `step` of worker `rank` (its share of `elements` values): OK, or the stop.
  absl::Status AfterStep(int64_t step, int rank, const GradientStats& stats, size_t elements);

 private:
  prometheus::Counter* const skipped_;
  std::ostream* const log_;
  int in_a_row_ = 0;
};

// One step of the loop, for this and every other trainer (worker/elastic_training.h): the slot's
// gradient share of step `step` at `params` (its non-finite values zeroed: see above), then
// `before_sync` (may be null; an error abandons
// the step before anything is sent), then the sync (on success `params` hold step `step`'s
// result), then the step's metrics (`metrics` may be null). Errors are annotated with the step.
// `timing` (may be null)
// receives the phases the metrics recorded; `before_sync` counts as compute, so the phases
// cover the whole step back to back. With an overlapped sync (ParameterSync::overlapped) the
// sync runs during the compute, bucket by bucket, and `before_sync` runs before the compute
// instead: before anything of the step is sent, as ever.
absl::StatusOr<GradientStats> TrainStep(TrainingJob& job, int64_t step, WorkerSlot slot,
                                        ParameterSync& sync, absl::Span<float> params,
                                        absl::Span<float> gradient, StepRecorder* metrics,
                                        const std::function<absl::Status()>& before_sync = nullptr,
                                        StepTiming* timing = nullptr);

// Runs options.steps steps (or until `observer` returns false). `metrics` may be null; else the
// step-time histograms, steps and loss of the sync's mode are recorded.
absl::StatusOr<TrainingResult> TrainDataParallel(const TrainingOptions& options, WorkerSlot slot,
                                                 ParameterSync& sync, Metrics* metrics,
                                                 const StepObserver& observer = nullptr);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_DATA_PARALLEL_H_
