#include "worker/elastic_training.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::worker {
namespace {

// The shards as this worker reaches them; `lost` is the ps_push fault point, asked only where
// a fault hook is set (the point serialises the pushes to the shards).
server::ShardGroupOptions ShardGroupOptionsOf(const ElasticOptions& options, std::ostream& log,
                                              std::function<bool()> lost) {
  server::ShardGroupOptions shards;
  shards.segment_bytes = options.segment_bytes;
  shards.window_bytes = options.ps_window_bytes;
  shards.timeout = options.timeout;
  shards.security = options.security;
  if (options.fault) shards.lost_after_first_push = std::move(lost);
  shards.log = &log;
  return shards;
}

// Each step's phases into the timeline and the trace. The trace's step time is the phases' sum,
// as the step-time histograms and the timeline have it, so the three never disagree.
class StepRecords final : public StepListener {
 public:
  StepRecords(Timeline* timeline, const StepTraceSink& trace)
      : timeline_(timeline), trace_(trace) {}
  absl::Status AfterStep(const CompletedStep& done) override {
    const GenerationView& generation = done.generation;
    if (timeline_ != nullptr) {
      timeline_->RecordStep(done.step, generation.generation, generation.mode, done.timing);
    }
    if (trace_) {
      trace_(StepTrace{done.step, generation.generation, generation.mode, generation.slot,
                       done.stats.mean_loss, absl::ToDoubleSeconds(done.timing.total()),
                       done.timing.start + done.timing.total(), done.state.parameters,
                       done.timing});
    }
    return absl::OkStatus();
  }

 private:
  Timeline* const timeline_;
  const StepTraceSink& trace_;
};

}  // namespace

ElasticTrainer::ElasticTrainer(AssignmentSource& assignments, ring::Collective* ring,
                               Metrics& metrics, ElasticOptions options, std::ostream& log,
                               StepTraceSink trace)
    : assignments_(assignments),
      ring_(ring),
      metrics_(metrics),
      options_(std::move(options)),
      log_(log),
      trace_(std::move(trace)),
      faults_(options_.fault, state_.completed),
      shard_group_(
          ShardGroupOptionsOf(options_, log_, [this] { return faults_.LostAt("ps_push"); }),
          &metrics_) {}

ElasticTrainer::~ElasticTrainer() = default;

void ElasticTrainer::Supersede(uint64_t generation) {
  if (ring_ != nullptr) ring_->Supersede(generation);
  shard_group_.Supersede(generation);
}

absl::Status ElasticTrainer::Run(const absl::Notification& stop, const FinishedCallback& finished) {
  absl::StatusOr<GenerationAssignment> first = absl::DeadlineExceededError("");
  while (!first.ok() && first.status().code() == absl::StatusCode::kDeadlineExceeded) {
    if (stop.HasBeenNotified()) return absl::OkStatus();
    first = assignments_.WaitForNewer(0, absl::Now() + absl::Milliseconds(200));
  }
  RETURN_IF_ERROR(first.status());
  const TrainingOptions training = first->job;
  ASSIGN_OR_RETURN(job_, TrainingJob::Create(training));
  metrics_.ExportWireDtype(training.wire_dtype);
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(training.optimizer, job_->parameter_count()));
  state_.optimizer = std::make_unique<Optimizer>(std::move(optimizer));
  state_.parameters = job_->InitialParameters();
  state_.gradient.resize(job_->parameter_count());
  records_ = std::make_unique<StepRecords>(options_.timeline, trace_);
  if (options_.evaluations && job_->test_set().rows() > 0) {
    AccuracyEvaluator::Options evaluation;
    evaluation.snapshot_prefix = options_.evaluation_snapshot_prefix;
    ASSIGN_OR_RETURN(std::unique_ptr<AccuracyEvaluator> evaluator,
                     AccuracyEvaluator::Create(job_->spec(), job_->test_set(), options_.evaluations,
                                               evaluation));
    evaluation_ = std::make_unique<EvaluationPoints>(std::move(evaluator), job_->options(),
                                                     shard_group_, metrics_);
  }
  checkpoints_ = std::make_unique<CheckpointUploads>(assignments_, shard_group_, training.optimizer,
                                                     metrics_, log_);
  wire_error_ = std::make_unique<WireErrorSampler>(
      ring_, metrics_, training.wire_dtype, state_.gradient,
      ControlCollectiveOptions(options_.segment_bytes, options_.timeout));
  // The sampled step's exact sum is numbered by whichever generation's sync is current.
  wire_error_->set_collective_of([this](int64_t step) { return sync_.WireErrorCollective(step); });

  bool reported = false;
  while (!stop.HasBeenNotified()) {
    // A generation newer than the one trained in is adopted before the next step.
    absl::StatusOr<GenerationAssignment> newer =
        assignments_.WaitForNewer(generation_.generation, absl::Now());
    if (newer.ok()) {
      if (generation_.generation != 0) LogNextGeneration(*newer);
      const absl::Time regroup_start = absl::Now();
      absl::Status status =
          newer->rank < 0
              ? absl::FailedPreconditionError("this worker has no rank in the generation")
              : AdoptGeneration(*newer);
      if (options_.timeline != nullptr) {
        options_.timeline->RecordRegroup(state_.completed, newer->generation, newer->mode,
                                         regroup_start, absl::Now() - regroup_start);
      }
      if (faults_.lost()) return faults_.LostStatus();
      // A regroup refused outright is not reported: one that fails every time (a ps generation
      // with no shard) would regroup for ever instead of ending after --regroup_timeout. One
      // whose collective or shard call ran out of time is, as a step's is: every member may be
      // alive and waiting in a cycle, and only a new generation (fresh streams) frees them.
      if (!status.ok()) {
        const bool timed_out = status.code() == absl::StatusCode::kDeadlineExceeded;
        RETURN_IF_ERROR(AwaitNewGeneration(newer->generation, status, stop, /*report=*/timed_out));
      }
      continue;  // a newer generation may have come during the regroup: adopt it before a step
    }
    if (newer.status().code() != absl::StatusCode::kDeadlineExceeded) return newer.status();
    if (state_.completed < training.steps) {
      if (HoldsForANewGeneration()) {
        RETURN_IF_ERROR(AwaitHeldGeneration());
        continue;
      }
      if (absl::Status status = Step(); !status.ok()) {
        if (faults_.lost()) return faults_.LostStatus();
        if (diverged_) return status;
        RETURN_IF_ERROR(AwaitNewGeneration(generation_.generation, status, stop, /*report=*/true));
      }
      continue;
    }
    if (!reported) {
      if (evaluation_ != nullptr) evaluation_->Finish(generation_.slot.rank, log_);
      ASSIGN_OR_RETURN(const ElasticResult result, Result());
      RETURN_IF_ERROR(finished(result));
      reported = true;
      if (!options_.stay_after_finish) return absl::OkStatus();
    }
    // Done: idle until the next generation (or a signal), then regroup with it.
    absl::StatusOr<GenerationAssignment> next =
        assignments_.WaitForNewer(generation_.generation, absl::Now() + absl::Milliseconds(200));
    if (!next.ok() && next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return next.status();
    }
  }
  return absl::OkStatus();
}

bool ElasticTrainer::HoldsForANewGeneration() const {
  return !held_ && options_.hold_for_new_generation_after >= 0 &&
         state_.completed >= options_.hold_for_new_generation_after;
}

absl::Status ElasticTrainer::AwaitHeldGeneration() {
  held_ = true;
  log_ << WorkerName(generation_.slot.rank) << ": holding after step " << state_.completed
       << " for the controller's next generation (--hold_at)\n";
  absl::StatusOr<GenerationAssignment> next =
      assignments_.WaitForNewer(generation_.generation, absl::Now() + options_.regroup_timeout);
  if (next.ok() || next.status().code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::OkStatus();  // adopted by the loop; none within the limit: train on
  }
  return next.status();
}

absl::StatusOr<ElasticResult> ElasticTrainer::Result() {
  // The job's steps are done: the gradient's buffer makes room for the result's copy of the
  // parameters (a later step, should a generation bring one, sizes it again).
  std::vector<float>().swap(state_.gradient);
  state_.ForgetLastSum();
  ElasticResult result;
  result.training.parameters = state_.parameters;
  result.training.last_step = last_stats_;
  result.training.steps = state_.completed;
  ASSIGN_OR_RETURN(result.training.final_eval, job_->Evaluate(state_.parameters));
  result.generation = generation_.generation;
  result.mode = generation_.mode;
  result.slot = generation_.slot;
  return result;
}

absl::Status ElasticTrainer::AwaitNewGeneration(uint64_t failed, const absl::Status& why,
                                                const absl::Notification& stop, bool report) {
  const std::string worker = WorkerName(generation_.slot.rank);
  const absl::Time deadline = absl::Now() + options_.regroup_timeout;
  if (why.code() == absl::StatusCode::kDeadlineExceeded) {
    log_ << worker << ": generation " << failed << "'s collective timed out at step "
         << state_.completed << " (--timeout=" << absl::FormatDuration(options_.timeout) << ")\n";
  }
  // A refused message or a silent peer heals without an operator: the controller forms a new
  // generation of the same members (a superseded generation's report changes nothing).
  // A peer gone (its stream broken: UNAVAILABLE, CANCELLED, ABORTED) is the heartbeat timeout's
  // to notice: a generation formed now would include it and fail again.
  const absl::StatusCode code = why.code();
  const bool refused = code != absl::StatusCode::kUnavailable &&
                       code != absl::StatusCode::kCancelled && code != absl::StatusCode::kAborted &&
                       code != absl::StatusCode::kUnknown;
  if (report && refused && !faults_.lost() && !stop.HasBeenNotified() &&
      assignments_.WaitForNewer(failed, absl::Now()).status().code() ==
          absl::StatusCode::kDeadlineExceeded) {
    const absl::Status reported = assignments_.ReportFailedGeneration(failed);
    if (reported.ok()) {
      log_ << worker << ": generation " << failed << " failed at step " << state_.completed << " ("
           << why.message() << "); asked the controller for a new generation\n";
    } else if (reported.code() != absl::StatusCode::kUnimplemented) {
      log_ << worker << ": could not report generation " << failed
           << " failed: " << reported.message() << "\n";
    }
    log_.flush();
  }
  bool told = false;
  while (absl::Now() < deadline) {
    if (stop.HasBeenNotified()) return absl::OkStatus();
    absl::StatusOr<GenerationAssignment> next =
        assignments_.WaitForNewer(failed, absl::Now() + absl::Milliseconds(200));
    if (next.ok()) return absl::OkStatus();  // Run logs and adopts it
    if (next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      // No generation will come (a static cluster, or the controller lost): the failure stands.
      return absl::Status(why.code(), absl::StrCat(why.message(), "; ", next.status().message()));
    }
    // The step stopped and no generation replaced this one yet: say why while waiting (a
    // switch's new generation usually arrives first, and then the log says only what it brings).
    if (!told) {
      log_ << worker << ": generation " << failed << " stopped at step " << state_.completed << " ("
           << why.message() << "); waiting for the controller's next generation\n";
      log_.flush();
      told = true;
    }
  }
  return Annotate(why, absl::StrCat("no new generation came within ",
                                    absl::FormatDuration(options_.regroup_timeout),
                                    " after generation ", failed, " failed"));
}

void ElasticTrainer::LogNextGeneration(const GenerationAssignment& next) {
  const std::string worker = WorkerName(generation_.slot.rank);
  if (next.mode != generation_.mode) {
    log_ << worker << ": switching to " << SyncModeName(next.mode) << " at step "
         << state_.completed << " (generation " << next.generation << ")\n";
  } else {
    log_ << worker << ": regrouping at step " << state_.completed << " for generation "
         << next.generation << "\n";
  }
  log_.flush();
}

Regroup ElasticTrainer::RegroupMembers(bool shards_may_keep_state) {
  RegroupOptions regroup;
  regroup.shards_may_keep_state = shards_may_keep_state;
  regroup.segment_bytes = options_.segment_bytes;
  regroup.timeout = options_.timeout;
  regroup.state_chunk_floats = options_.state_chunk_floats;
  regroup.replay_last_step = options_.replay_last_step;
  return Regroup(*ring_, assignments_, shard_group_, *job_, state_, faults_, metrics_, log_,
                 regroup);
}

absl::Status ElasticTrainer::AdoptGeneration(const GenerationAssignment& assignment) {
  const uint64_t generation = assignment.generation;
  const int world = assignment.world;
  const int rank = assignment.rank;
  const SyncMode mode = assignment.mode;
  if (faults_.LostAt("assigned")) return faults_.LostStatus();
  if (generation_.generation != 0 && mode != generation_.mode && faults_.LostAt("switch")) {
    return faults_.LostStatus();
  }
  sync_ = GenerationSync();
  // Under --staleness=k, async or backup workers the shards hold the job's state once a step is
  // trained (StateHome::kShards) and each worker only its last pull: the regroup takes the state
  // from the shards (AgreeOnState; docs/architecture.md, "Bounded staleness and async"), also
  // after a regroup that failed.
  const bool has_ring = !assignment.ring.empty();
  if (has_ring != (ring_ != nullptr) || (!has_ring && !assignment.fresh_start) ||
      (!has_ring && mode != SyncMode::kPs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generation ", generation, " gives ", assignment.ring.size(),
                     " ring addresses to a worker ", ring_ == nullptr ? "without" : "with",
                     " a ring; only a fresh ps generation may have none"));
  }
  if (has_ring) {
    RETURN_IF_ERROR(ring_->Reconfigure(ring::RingTopology{generation, world, rank}, assignment.ring,
                                       assignment.ring_key));
  }
  // The new generation's shards, before the state is agreed on: a regroup may read it from them.
  const TrainingOptions& job = job_->options();
  const bool shards_hold_state = ShardsHoldTheState(job.staleness, job.backup_workers);
  shard_group_.Reconfigure(server::ShardGroupTopology{
      job_->parameter_count(), job.wire_dtype, shards_hold_state, generation, rank, world,
      assignment.shards, assignment.shard_keys, assignment.load_keys, assignment.departed_shards,
      assignment.departed_load_keys, job.compression, job.compression_warmup});
  if (mode == SyncMode::kPs && assignment.shards.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("generation ", generation,
                     " is in ps mode but has no shard left: waiting for a shard "
                     "to register (or for `ringside ctl mode ring`)"));
  }
  // The new slot's rows are read while the state is agreed on and handed over, at the step this
  // member completed (the one the regroup settles on but where a member lags or a checkpoint
  // is read; PrepareRows below then reads again).
  job_->PrefetchRows(state_.completed, WorkerSlot{rank, world});
  // A fresh start needs no regroup: everyone holds the initial parameters, the shards too.
  Regroup regroup = RegroupMembers(mode == SyncMode::kPs && shards_hold_state &&
                                   assignment.departed_shards.empty());
  if (!assignment.fresh_start) {
    RETURN_IF_ERROR(regroup.AgreeOnState(generation, world, rank, assignment.checkpoint_step));
    // Every member holds the job's state again, unless the shards kept it.
    if (state_.home == StateHome::kShards && !regroup.shards_kept_state()) {
      state_.home = StateHome::kWorkers;
    }
  }

  const SyncParts parts{*job_,   *state_.optimizer,      *wire_error_,
                        faults_, options_.segment_bytes, options_.timeout};
  if (mode == SyncMode::kPs) {
    if (!assignment.fresh_start) RETURN_IF_ERROR(regroup.LoadShards(generation, rank));
    RETURN_IF_ERROR(shard_group_.Connect());
    ASSIGN_OR_RETURN(sync_, MakePsSync(parts, shard_group_, generation, state_.completed));
  } else {
    sync_ = MakeRingSync(parts, *ring_, generation);
  }
  // The new slot's training rows are held now (PrefetchRows read them during the hand-over),
  // not read in the next step's compute.
  RETURN_IF_ERROR(job_->PrepareRows(state_.completed, WorkerSlot{rank, world}));
  generation_ =
      GenerationView{generation, mode, WorkerSlot{rank, world}, assignment.checkpoint_every,
                     mode == SyncMode::kPs && shards_hold_state};
  metrics_.ExportMembership(world, generation, mode);
  log_ << WorkerName(rank) << ": generation " << generation << ", " << SyncModeName(mode)
       << " mode, " << world << " workers, resuming at step " << state_.completed << "\n";
  log_.flush();
  return absl::OkStatus();
}

absl::Status ElasticTrainer::Step() {
  records_->BeforeStep(generation_, state_);
  if (evaluation_ != nullptr) evaluation_->BeforeStep(generation_, state_);
  wire_error_->BeforeStep(generation_, state_);
  const int64_t step = state_.completed;
  StepTiming timing;
  state_.gradient.resize(state_.parameters.size());
  state_.ForgetLastSum();  // the buffer is this step's from now on, whatever becomes of it
  ASSIGN_OR_RETURN(
      last_stats_,
      TrainStep(
          *job_, step, generation_.slot, *sync_.sync, absl::MakeSpan(state_.parameters),
          absl::MakeSpan(state_.gradient), &step_metrics_,
          [&]() -> absl::Status {
            if (generation_.mode == SyncMode::kRing && faults_.LostAt("ring_step")) {
              return faults_.LostStatus();
            }
            return absl::OkStatus();
          },
          &timing));
  state_.completed = sync_.sync->NextStep(step);
  if (absl::Status rule = nonfinite_skips_.AfterStep(step, generation_.slot.rank, last_stats_,
                                                     state_.gradient.size());
      !rule.ok()) {
    diverged_ = true;
    return rule;
  }
  // The buffer holds the sum this step applied, which a regroup may replay on members behind;
  // not where the shards hold the state (each worker's pulls differ): they hold it now.
  state_.home = generation_.shards_hold_state ? StateHome::kShards : StateHome::kWorkersWithLastSum;
  const CompletedStep done{step, state_.completed, generation_, timing, last_stats_, state_};
  RETURN_IF_ERROR(records_->AfterStep(done));
  if (evaluation_ != nullptr) RETURN_IF_ERROR(evaluation_->AfterStep(done));
  assignments_.ReportCompletedSteps(static_cast<uint64_t>(state_.completed));
  RETURN_IF_ERROR(checkpoints_->AfterStep(done));
  // Sampled steps only, outside the step's phases: the step is complete whatever comes of it
  // (a failure here is a broken ring, which the next generation mends).
  return wire_error_->AfterStep(done);
}

}  // namespace ringside::worker
