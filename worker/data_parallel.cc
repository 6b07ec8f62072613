#include "worker/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/compression.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/overlapped_sync.h"

namespace ringside::worker {

std::vector<int64_t> WindowRows(const BatchSchedule& schedule, WorkerSlot slot, int64_t first_step,
                                int64_t last_step, int64_t row_bytes, int64_t max_bytes) {
  const int64_t per_step =
      static_cast<int64_t>(WorkerSlice(schedule.global_batch(), slot.rank, slot.world).size());
  const int64_t affordable = max_bytes / std::max<int64_t>(1, per_step * row_bytes);
  const int64_t steps =
      std::clamp<int64_t>(affordable, 1, std::max<int64_t>(1, last_step - first_step));
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(steps * per_step));
  for (int64_t step = first_step; step < first_step + steps; ++step) {
    const std::vector<int64_t> share = schedule.WorkerBatchRows(step, slot.rank, slot.world);
    rows.insert(rows.end(), share.begin(), share.end());
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

TrainingJob::TrainingJob(TrainingOptions options, ModelSpec spec, DataSpec data_spec,
                         DataSplits data, BatchSchedule schedule,
                         std::unique_ptr<GradientComputer> computer)
    : options_(std::move(options)),
      spec_(std::move(spec)),
      data_spec_(std::move(data_spec)),
      data_(std::move(data.train)),
      test_(std::move(data.test)),
      schedule_(std::move(schedule)),
      computer_(std::move(computer)) {}

absl::StatusOr<std::unique_ptr<TrainingJob>> TrainingJob::Create(const TrainingOptions& options) {
  RETURN_IF_ERROR(CheckSyncSettings(options));
  ASSIGN_OR_RETURN(ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(const DataSpec data_spec, ParseDataSpec(options.data));
  ASSIGN_OR_RETURN(DataSplits data,
                   LoadDataSplits(data_spec, spec, options.seed, TrainingRows::kOnDemand));
  ASSIGN_OR_RETURN(BatchSchedule schedule,
                   BatchSchedule::Create(data.train.rows(), options.batch_size, options.seed));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer,
                   MakeGradientComputer(options.device, spec));
  return std::unique_ptr<TrainingJob>(new TrainingJob(options, std::move(spec), data_spec,
                                                      std::move(data), std::move(schedule),
                                                      std::move(computer)));
}

std::vector<float> TrainingJob::InitialParameters() const {
  return ringside::InitialParameters(spec_, options_.seed);
}

absl::Duration StragglerDelay(const Straggler& straggler, int rank, absl::Duration compute) {
  if (straggler.worker != rank || straggler.factor <= 1) return absl::ZeroDuration();
  return compute * static_cast<double>(straggler.factor - 1);
}

absl::Status TrainingJob::PrepareRows(int64_t step, WorkerSlot slot) {
  // A finished job (a regroup after the last step) runs no step that would use them.
  if (step >= options_.steps) return absl::OkStatus();
  return HoldRows(step, slot, schedule_.WorkerBatchRows(step, slot.rank, slot.world));
}

void TrainingJob::PrefetchRows(int64_t step, WorkerSlot slot) {
  if (step >= options_.steps || prefetched_.valid()) return;
  if (data_.Holds(schedule_.WorkerBatchRows(step, slot.rank, slot.world))) return;
  prefetched_ =
      std::async(std::launch::async, [spec = data_spec_, model = spec_, seed = options_.seed,
                                      rows = TrainingWindowRows(step, slot)] {
        return LoadTrainingRows(spec, model, seed, rows);
      });
}

absl::Status TrainingJob::HoldRows(int64_t step, WorkerSlot slot,
                                   const std::vector<int64_t>& rows) {
  if (data_.Holds(rows)) return absl::OkStatus();
  if (prefetched_.valid()) {
    absl::StatusOr<Dataset> window = prefetched_.get();
    if (window.ok() && window->Holds(rows)) {
      data_ = *std::move(window);
      return absl::OkStatus();
    }
  }
  return ReadWindow(step, slot);
}

std::vector<int64_t> TrainingJob::TrainingWindowRows(int64_t step, WorkerSlot slot) const {
  return WindowRows(schedule_, slot, step, options_.steps, data_.features, kTrainingWindowBytes);
}

absl::Status TrainingJob::ReadWindow(int64_t step, WorkerSlot slot) {
  const std::vector<int64_t> rows = TrainingWindowRows(step, slot);
  data_ = Dataset();  // the old window goes before the new one is read
  ASSIGN_OR_RETURN(data_, LoadTrainingRows(data_spec_, spec_, options_.seed, rows));
  return absl::OkStatus();
}

absl::StatusOr<GradientStats> TrainingJob::ComputeShare(
    int64_t step, WorkerSlot slot, absl::Span<const float> params, absl::Span<float> gradient,
    const std::function<void(int layer, ElementRange range)>& on_layer_ready) {
  const std::vector<int64_t> rows = schedule_.WorkerBatchRows(step, slot.rank, slot.world);
  RETURN_IF_ERROR(HoldRows(step, slot, rows));
  const absl::Time start = absl::Now();  // the straggler slows the compute, not the read
  GatherRows(data_, rows, batch_);
  GradientOptions gradient_options;
  gradient_options.normalizer_rows = schedule_.global_batch();
  gradient_options.on_layer_ready = on_layer_ready;
  absl::StatusOr<GradientStats> stats =
      computer_->ComputeGradient(params, batch_.view(), gradient, gradient_options);
  // An injected straggler, for benchmarks: the delay is part of the compute phase it slows.
  const absl::Duration delay = StragglerDelay(options_.straggler, slot.rank, absl::Now() - start);
  if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
  return stats;
}

absl::StatusOr<Evaluation> TrainingJob::Evaluate(absl::Span<const float> params) {
  return EvaluateDataset(*computer_, params, test_.rows() > 0 ? test_ : data_);
}

void StepRecorder::Record(SyncMode mode, absl::Duration compute, const SyncTiming& sync,
                          double loss) {
  if (metrics_ == nullptr) return;
  std::optional<StepMetrics>& series = mode == SyncMode::kRing ? ring_ : ps_;
  if (!series.has_value()) series = metrics_->Steps(mode);
  series->compute->Observe(absl::ToDoubleSeconds(compute));
  series->sync->Observe(absl::ToDoubleSeconds(sync.sync));
  series->update->Observe(absl::ToDoubleSeconds(sync.update));
  series->steps->Increment();
  series->loss->Set(loss);
}

absl::Status NonFiniteSkips::AfterStep(int64_t step, int rank, const GradientStats& stats,
                                       size_t elements) {
  if (stats.non_finite == 0) {
    in_a_row_ = 0;
    return absl::OkStatus();
  }
  ++in_a_row_;
  if (skipped_ != nullptr) skipped_->Increment();
  const std::string what =
      absl::StrCat(WorkerName(rank), "'s own gradient of step ", step, " had ", stats.non_finite,
                   " of ", elements, " values NaN or infinite (", in_a_row_, " step",
                   in_a_row_ == 1 ? "" : "s", " in a row)");
  if (in_a_row_ > kMaxNonFiniteSkips) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, "; more than ", kMaxNonFiniteSkips,
                     " in a row: the model diverges, so the worker stops (lower --lr?)"));
  }
  if (log_ != nullptr) {
    *log_ << what << ": they were sent as zeros, the rest of the share as computed\n";
    log_->flush();
  }
  return absl::OkStatus();
}

namespace {

// The share's NaNs and infinities become zeros: never sent, never summed. How many there were.
int64_t ZeroNonFinite(absl::Span<float> share) {
  int64_t zeroed = 0;
  for (float& value : share) {
    if (!std::isfinite(value)) {
      value = 0.0f;
      ++zeroed;
    }
  }
  return zeroed;
}

// A step's end, overlapped or not: the sync's failure annotated with the step, else the step's
// metrics and phases recorded from `start`.
absl::StatusOr<GradientStats> EndStep(int64_t step, SyncMode mode, absl::Time start,
                                      absl::Duration compute,
                                      const absl::StatusOr<SyncTiming>& sync_timing,
                                      const GradientStats& stats, StepRecorder* metrics,
                                      StepTiming* timing) {
  if (!sync_timing.ok()) {
    return Annotate(sync_timing.status(), absl::StrCat("training step ", step));
  }
  if (metrics != nullptr) metrics->Record(mode, compute, *sync_timing, stats.mean_loss);
  if (timing != nullptr) {
    *timing = {start, compute, sync_timing->sync, sync_timing->update, sync_timing->overlap};
  }
  return stats;
}

// TrainStep with an overlapped sync: `before_sync` first (nothing is sent before it), then the
// compute, reporting each layer to the sync, whose buckets go out meanwhile; then the rest.
absl::StatusOr<GradientStats> TrainOverlappedStep(TrainingJob& job, int64_t step, WorkerSlot slot,
                                                  OverlappedSync& sync, absl::Span<float> params,
                                                  absl::Span<float> gradient, StepRecorder* metrics,
                                                  const std::function<absl::Status()>& before_sync,
                                                  StepTiming* timing) {
  const absl::Time start = absl::Now();
  if (before_sync) RETURN_IF_ERROR(before_sync());
  sync.Begin(step, gradient);
  int64_t non_finite = 0;
  absl::StatusOr<GradientStats> stats =
      job.ComputeShare(step, slot, params, gradient, [&](int layer, ElementRange range) {
        non_finite += ZeroNonFinite(gradient.subspan(range.begin, range.end - range.begin));
        sync.LayerReady(layer);
      });
  const absl::Time computed = absl::Now();
  if (!stats.ok()) {
    sync.Abandon();
    return stats.status();
  }
  stats->non_finite = non_finite;
  return EndStep(step, sync.mode(), start, computed - start, sync.Finish(params, computed), *stats,
                 metrics, timing);
}

}  // namespace

absl::StatusOr<GradientStats> TrainStep(TrainingJob& job, int64_t step, WorkerSlot slot,
                                        ParameterSync& sync, absl::Span<float> params,
                                        absl::Span<float> gradient, StepRecorder* metrics,
                                        const std::function<absl::Status()>& before_sync,
                                        StepTiming* timing) {
  if (OverlappedSync* overlapped = sync.overlapped(); overlapped != nullptr) {
    return TrainOverlappedStep(job, step, slot, *overlapped, params, gradient, metrics, before_sync,
                               timing);
  }
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(GradientStats stats, job.ComputeShare(step, slot, params, gradient));
  stats.non_finite = ZeroNonFinite(gradient);
  if (before_sync) RETURN_IF_ERROR(before_sync());
  const absl::Duration compute = absl::Now() - start;
  return EndStep(step, sync.mode(), start, compute, sync.Step(step, gradient, params), stats,
                 metrics, timing);
}

absl::StatusOr<TrainingResult> TrainDataParallel(const TrainingOptions& options, WorkerSlot slot,
                                                 ParameterSync& sync, Metrics* metrics,
                                                 const StepObserver& observer) {
  if (slot.world < 1 || slot.rank < 0 || slot.rank >= slot.world) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker rank ", slot.rank, " is not in a world of ", slot.world));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TrainingJob> job, TrainingJob::Create(options));
  TrainingResult result;
  result.parameters = job->InitialParameters();
  std::vector<float> gradient(job->parameter_count());
  RETURN_IF_ERROR(job->PrepareRows(0, slot));  // before the first step's clock starts
  StepRecorder step_metrics(metrics);
  // Single-process training has no log of its own: the counter and the stop say it.
  NonFiniteSkips skips(metrics != nullptr ? &metrics->NonFiniteRefused("own_gradient") : nullptr,
                       nullptr);
  for (int64_t step = 0; step < options.steps; step = result.steps) {
    ASSIGN_OR_RETURN(result.last_step,
                     TrainStep(*job, step, slot, sync, absl::MakeSpan(result.parameters),
                               absl::MakeSpan(gradient), &step_metrics));
    RETURN_IF_ERROR(skips.AfterStep(step, slot.rank, result.last_step, gradient.size()));
    result.steps = sync.NextStep(step);
    if (observer && !observer(step, result.last_step, result.parameters)) break;
  }
  ASSIGN_OR_RETURN(result.final_eval, job->Evaluate(result.parameters));
  return result;
}

}  // namespace ringside::worker
