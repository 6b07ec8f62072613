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
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/optimizer.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/local_training.h"
#include "worker/parameter_sync.h"
#include "worker/timeline.h"

namespace ringside::worker {

struct WorkerSlot {
  int rank = 0;
  int world = 1;
};

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
class TrainingJob {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingJob>> Create(const TrainingOptions& options);

  const TrainingOptions& options() const { return options_; }
  const ModelSpec& spec() const { return spec_; }
  size_t parameter_count() const { return spec_.parameter_count(); }
  // The data's held-out test set; no rows when it has none. Lives as long as the job.
  const Dataset& test_set() const { return test_; }
  std::vector<float> InitialParameters() const;
  // The slot's share of step `step`'s gradient, normalised by the global batch (so the sum over
  // the world's shares is the global mean gradient). The straggler (options().straggler) then
  // waits StragglerDelay.
  absl::StatusOr<GradientStats> ComputeShare(int64_t step, WorkerSlot slot,
                                             absl::Span<const float> params,
                                             absl::Span<float> gradient);
  // Loss and accuracy of `params` on the held-out test set where the data has one, else on the
  // whole training set (in pieces: see EvaluateInChunks).
  absl::StatusOr<Evaluation> Evaluate(absl::Span<const float> params);

 private:
  TrainingJob(TrainingOptions options, ModelSpec spec, DataSplits data, BatchSchedule schedule,
              std::unique_ptr<GradientComputer> computer);

  TrainingOptions options_;
  ModelSpec spec_;
  Dataset data_;
  Dataset test_;
  BatchSchedule schedule_;
  std::unique_ptr<GradientComputer> computer_;
  OwnedBatch batch_;
};

// One step of the loop, for this and every other trainer (worker/elastic_training.h): the slot's
// gradient share of step `step` at `params`, then `before_sync` (may be null; an error abandons
// the step before anything is sent), then the sync (on success `params` hold step `step`'s
// result), then the step's metrics (`metrics` may be null). Errors are annotated with the step.
// `timing` (may be null)
// receives the phases the metrics recorded; `before_sync` counts as compute, so the phases
// cover the whole step back to back.
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
