#include "worker/elastic_training.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/status_macros.h"
#include "server/ps/shard_transfer.h"
#include "worker/gradient_buckets.h"
#include "worker/overlapped_sync.h"
#include "worker/push_pull_sync.h"
#include "worker/regroup.h"

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

bool ElasticTrainer::ShardsHoldState() const {
  return mode_ == SyncMode::kPs &&
         ShardsHoldTheState(job_->options().staleness, job_->options().backup_workers);
}

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
  wire_dtype_ = training.wire_dtype;
  metrics_.ExportWireDtype(wire_dtype_);
  if (options_.evaluations && job_->test_set().rows() > 0) {
    TestEvaluator::Options evaluation;
    evaluation.snapshot_prefix = options_.evaluation_snapshot_prefix;
    ASSIGN_OR_RETURN(evaluator_, TestEvaluator::Create(job_->spec(), job_->test_set(),
                                                       options_.evaluations, evaluation));
  }
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(training.optimizer, job_->parameter_count()));
  state_.optimizer = std::make_unique<Optimizer>(std::move(optimizer));
  state_.parameters = job_->InitialParameters();
  state_.gradient.resize(job_->parameter_count());

  bool reported = false;
  while (!stop.HasBeenNotified()) {
    // A generation newer than the one trained in is adopted before the next step.
    absl::StatusOr<GenerationAssignment> newer =
        assignments_.WaitForNewer(generation_, absl::Now());
    if (newer.ok()) {
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
      if (!status.ok()) RETURN_IF_ERROR(AwaitNewGeneration(newer->generation, status, stop));
      continue;  // a newer generation may have come during the regroup: adopt it before a step
    }
    if (newer.status().code() != absl::StatusCode::kDeadlineExceeded) return newer.status();
    if (state_.completed < training.steps) {
      if (absl::Status status = Step(); !status.ok()) {
        if (faults_.lost()) return faults_.LostStatus();
        RETURN_IF_ERROR(AwaitNewGeneration(generation_, status, stop));
      }
      continue;
    }
    if (!reported) {
      FinishEvaluations();
      ASSIGN_OR_RETURN(const ElasticResult result, Result());
      RETURN_IF_ERROR(finished(result));
      reported = true;
      if (!options_.stay_after_finish) return absl::OkStatus();
    }
    // Done: idle until the next generation (or a signal), then regroup with it.
    absl::StatusOr<GenerationAssignment> next =
        assignments_.WaitForNewer(generation_, absl::Now() + absl::Milliseconds(200));
    if (!next.ok() && next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return next.status();
    }
  }
  return absl::OkStatus();
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
  result.generation = generation_;
  result.mode = mode_;
  result.slot = slot_;
  return result;
}

absl::Status ElasticTrainer::AwaitNewGeneration(uint64_t failed, const absl::Status& why,
                                                const absl::Notification& stop) {
  log_ << WorkerName(slot_.rank) << ": generation " << failed << " failed at step "
       << state_.completed << " (" << why.message()
       << "); waiting for the controller's next generation\n";
  log_.flush();
  const absl::Time deadline = absl::Now() + options_.regroup_timeout;
  while (absl::Now() < deadline) {
    if (stop.HasBeenNotified()) return absl::OkStatus();
    absl::StatusOr<GenerationAssignment> next =
        assignments_.WaitForNewer(failed, absl::Now() + absl::Milliseconds(200));
    if (next.ok()) return absl::OkStatus();
    if (next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      // No generation will come (a static cluster, or the controller lost): the failure stands.
      return absl::Status(why.code(), absl::StrCat(why.message(), "; ", next.status().message()));
    }
  }
  return Annotate(why, absl::StrCat("no new generation came within ",
                                    absl::FormatDuration(options_.regroup_timeout),
                                    " after generation ", failed, " failed"));
}

Regroup ElasticTrainer::RegroupMembers() {
  RegroupOptions regroup;
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
  if (generation_ != 0 && mode != mode_ && faults_.LostAt("switch")) return faults_.LostStatus();
  sync_.reset();
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
  shard_group_.Reconfigure(server::ShardGroupTopology{
      job_->parameter_count(), wire_dtype_,
      ShardsHoldTheState(job_->options().staleness, job_->options().backup_workers), generation,
      rank, world, assignment.shards, assignment.shard_keys, assignment.load_keys});
  if (mode == SyncMode::kPs && assignment.shards.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("generation ", generation,
                     " is in ps mode but has no shard left: waiting for a shard "
                     "to register (or for `ringside ctl mode ring`)"));
  }
  // A fresh start needs no regroup: everyone holds the initial parameters, the shards too.
  checkpoint_every_ = assignment.checkpoint_every;
  if (!assignment.fresh_start) {
    RETURN_IF_ERROR(
        RegroupMembers().AgreeOnState(generation, world, rank, assignment.checkpoint_step));
    // Every member holds the job's state again.
    if (state_.home == StateHome::kShards) state_.home = StateHome::kWorkers;
  }

  if (mode == SyncMode::kPs) {
    if (!assignment.fresh_start) RETURN_IF_ERROR(RegroupMembers().LoadShards(generation, rank));
    RETURN_IF_ERROR(InstallPsSync());
  } else {
    InstallRingSync(generation);
  }
  // The new slot's training rows are read now, in the regroup, not in the next step's compute.
  RETURN_IF_ERROR(job_->PrepareRows(state_.completed, WorkerSlot{rank, world}));
  generation_ = generation;
  mode_ = mode;
  slot_ = WorkerSlot{rank, world};
  metrics_.ExportMembership(world, generation, mode);
  log_ << WorkerName(rank) << ": generation " << generation << ", " << SyncModeName(mode)
       << " mode, " << world << " workers, resuming at step " << state_.completed << "\n";
  log_.flush();
  return absl::OkStatus();
}

absl::Status ElasticTrainer::InstallPsSync() {
  RETURN_IF_ERROR(shard_group_.Connect());
  server::ShardGroup* shards = &shard_group_;
  if (ShardsHoldTheState(job_->options().staleness, job_->options().backup_workers)) {
    std::optional<VersionSteps> version_steps;
    if (job_->options().backup_workers > 0) {
      version_steps = VersionSteps{state_.completed, job_->options().steps};
    }
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<server::StaleShardLink>> links,
                     shards->PushPullLinks());
    sync_ = std::make_unique<PushPullSync>(shards->ranges(), std::move(links), version_steps);
    return absl::OkStatus();
  }
  collective_stride_ = 2;
  std::vector<GradientBucket> buckets = PlanBuckets(job_->spec(), job_->options().bucket_bytes);
  if (buckets.size() > 1) {
    // Each bucket is kept (sampled steps) and divided for the wire as it is complete.
    sync_ = std::make_unique<OverlappedSync>(
        SyncMode::kPs, std::move(buckets),
        [shards](int64_t step, absl::Span<float> g, const AwaitReady& ready) {
          return shards->SumAsReady(step, g, ready);
        },
        KeepingSampledBuckets([shards](absl::Span<float> part) { shards->PrepareShare(part); }),
        *state_.optimizer);
  } else {
    sync_ = std::make_unique<SumThenUpdate>(
        SyncMode::kPs, KeepingSampledShares([shards](int64_t step, absl::Span<float> g) {
          return shards->Sum(step, g);
        }),
        *state_.optimizer);
  }
  return absl::OkStatus();
}

void ElasticTrainer::InstallRingSync(uint64_t generation) {
  ring::AllreduceOptions allreduce;
  allreduce.segment_bytes = options_.segment_bytes;
  allreduce.timeout = options_.timeout;
  allreduce.op = ring::ReduceOp::kSum;  // shares are pre-scaled by the global batch
  allreduce.wire_dtype = wire_dtype_;
  const uint64_t first = CollectiveBase(generation) + kFirstStepCollective;
  ring::Collective* ring = ring_;
  std::vector<GradientBucket> buckets = PlanBuckets(job_->spec(), job_->options().bucket_bytes);
  // Step t's B buckets are collectives first + (B + 1)t + b and its sampled wire error the next,
  // first + (B + 1)t + B: every worker plans alike (the same job), so every worker numbers alike;
  // unbucketed (B = 1) that is today's first + 2t.
  collective_stride_ = buckets.size() + 1;
  if (buckets.size() > 1) {
    const uint64_t stride = collective_stride_;
    sync_ = std::make_unique<OverlappedSync>(
        SyncMode::kRing, buckets,
        [this, ring, allreduce, first, stride, buckets](int64_t step, absl::Span<float> g,
                                                        const AwaitReady& ready) -> absl::Status {
          const uint64_t base = first + stride * static_cast<uint64_t>(step);
          for (size_t b = 0; b < buckets.size(); ++b) {
            const ElementRange range = buckets[b].range;
            if (!ready(range.begin)) return absl::CancelledError("the step's compute failed");
            // The fault point between buckets: the sync thread's, read back after it is joined.
            if (b == 1 && faults_.LostAt("ring_bucket")) return faults_.LostStatus();
            RETURN_IF_ERROR(
                ring->Allreduce(base + b, g.subspan(range.begin, range.size()), allreduce));
          }
          return absl::OkStatus();
        },
        KeepingSampledBuckets(nullptr), *state_.optimizer);
    return;
  }
  sync_ = std::make_unique<SumThenUpdate>(
      SyncMode::kRing,
      KeepingSampledShares([ring, allreduce, first](int64_t step, absl::Span<float> g) {
        return ring->Allreduce(first + 2 * static_cast<uint64_t>(step), g, allreduce);
      }),
      *state_.optimizer);
}

PrepareBucket ElasticTrainer::KeepingSampledBuckets(
    std::function<void(absl::Span<float>)> prepare) {
  return [this, prepare = std::move(prepare)](int64_t step, int, ElementRange range) {
    const absl::Span<float> part =
        absl::MakeSpan(state_.gradient).subspan(range.begin, range.size());
    // Without a ring (a static ps cluster) there is no way to the exact sum: nothing is sampled.
    if (ring_ != nullptr && ring::WireErrorProbe::Due(wire_dtype_, step)) {
      wire_error_.KeepPart(state_.gradient.size(), range.begin, part);
    }
    if (prepare) prepare(part);
  };
}

SumShares ElasticTrainer::KeepingSampledShares(SumShares sum) {
  // Without a ring (a static ps cluster) there is no way to the exact sum: nothing is sampled.
  if (ring_ == nullptr) return sum;
  return [this, sum = std::move(sum)](int64_t step, absl::Span<float> g) {
    if (ring::WireErrorProbe::Due(wire_dtype_, step)) wire_error_.Keep(g);
    return sum(step, g);
  };
}

absl::Status ElasticTrainer::MeasureWireError(int64_t step) {
  if (!ring::WireErrorProbe::Due(wire_dtype_, step) || !wire_error_.holds_share()) {
    return absl::OkStatus();
  }
  const uint64_t collective = CollectiveBase(generation_) + kFirstStepCollective +
                              collective_stride_ * static_cast<uint64_t>(step) +
                              (collective_stride_ - 1);
  // state_.gradient holds the sum the step applied (the optimiser reads it, never writes it).
  ASSIGN_OR_RETURN(
      const double error,
      wire_error_.Measure(*ring_, collective, state_.gradient,
                          ControlCollectiveOptions(options_.segment_bytes, options_.timeout)));
  double& largest = wire_error_max_[mode_ == SyncMode::kRing ? 0 : 1];
  largest = std::max(largest, error);
  metrics_.WireRelativeError(mode_).Set(largest);
  metrics_.WireErrorSamples(mode_).Increment();
  return absl::OkStatus();
}

absl::Status ElasticTrainer::SaveCheckpointIfDue() {
  if (slot_.rank != 0 || checkpoint_every_ == 0 ||
      static_cast<uint64_t>(state_.completed) % checkpoint_every_ != 0) {
    return absl::OkStatus();
  }
  // Under --staleness=k, async or backup workers the job's state is the shards', not this
  // worker's (its last pull, and an optimiser that has not run): the checkpoint is theirs, read
  // as a regroup reads it (docs/architecture.md, "Bounded staleness and async").
  if (ShardsHoldState()) {
    ASSIGN_OR_RETURN(const server::JobState state,
                     shard_group_.ReadState(job_->options().optimizer));
    return UploadCheckpoint(state.step, state.parameters.size() + state.optimizer_state.size(),
                            StatePiecesOf(state.parameters, state.optimizer_state));
  }
  // Read from the live state a segment at a time, as the state hand-over reads it: no copy of
  // the optimiser's state (2K floats with Adam) on the member that uploads.
  return UploadCheckpoint(static_cast<uint64_t>(state_.completed),
                          state_.parameters.size() + state_.optimizer->state_size(),
                          [this](uint64_t offset, absl::Span<float> out) {
                            state_.ReadPiece(absl::Span<const float>(), offset, out);
                          });
}

absl::Status ElasticTrainer::UploadCheckpoint(uint64_t step, uint64_t state_elements,
                                              const StatePieceReader& read) {
  RETURN_IF_ERROR(
      assignments_.SaveCheckpoint(step, state_.parameters.size(), state_elements, read));
  metrics_.Checkpoints("uploaded").Increment();
  metrics_.CheckpointBytes("uploaded")
      .Increment(static_cast<double>(state_elements * sizeof(float)));
  return absl::OkStatus();
}

void ElasticTrainer::EvaluateIfDue() {
  if (evaluator_ == nullptr || slot_.rank != 0 || state_.completed == last_evaluated_) return;
  const TrainingOptions& job = job_->options();
  // A point every eval_every steps; a worker that skipped steps (backup workers), or found the
  // evaluator busy, takes the first step past each multiple it missed.
  const bool missed =
      last_evaluated_ >= 0 && state_.completed / job.eval_every > last_evaluated_ / job.eval_every;
  const bool last = state_.completed == job.steps;
  if (state_.completed % job.eval_every != 0 && !missed && !last) return;
  // The final parameters' point is never deferred: the job waits for the evaluator to be idle.
  if (last) evaluator_->Drain();
  // When the shards hold the state their ranges may hold different numbers of updates at any
  // moment (a read would rarely find them agreeing on a step): the point is then the parameters
  // this worker pulled, the ones it computes its next step on.
  const bool taken =
      mode_ == SyncMode::kPs && !ShardsHoldState()
          // The shards' own copy, read on the evaluator's thread: this one goes on training.
          ? evaluator_->OfferShardRead(
                state_.completed,
                [read = shard_group_.transfer()](uint64_t count,
                                                 const TestEvaluator::ValuesWriter& write) {
                  return server::ReadShardParameters(read, count, write);
                })
          : evaluator_->OfferSnapshot(state_.completed, state_.parameters);
  if (taken) last_evaluated_ = state_.completed;
}

void ElasticTrainer::FinishEvaluations() {
  if (evaluator_ == nullptr) return;
  evaluator_->Drain();
  const TestEvaluator::Failures failures = evaluator_->failures();
  const int64_t deferred = evaluator_->deferred();
  const int64_t repeated = evaluator_->repeated();
  if (failures.count == 0 && deferred == 0 && repeated == 0) return;
  log_ << WorkerName(slot_.rank) << ": test evaluations: " << deferred
       << " deferred to a later step (a read in progress or the snapshots' disk budget spent when "
          "due), "
       << repeated << " skipped (a shard read of a step already evaluated), " << failures.count
       << " failed"
       << (failures.count > 0 ? absl::StrCat(" (last: ", failures.last.message(), ")")
                              : std::string())
       << "\n";
  log_.flush();
}

absl::Status ElasticTrainer::Step() {
  if (state_.completed == 0) EvaluateIfDue();  // the initial parameters: the curve's first point
  const int64_t step = state_.completed;
  wire_error_.Forget();  // a share kept by a step that failed
  StepTiming timing;
  state_.gradient.resize(state_.parameters.size());
  state_.ForgetLastSum();  // the buffer is this step's from now on, whatever becomes of it
  ASSIGN_OR_RETURN(last_stats_,
                   TrainStep(
                       *job_, state_.completed, slot_, *sync_, absl::MakeSpan(state_.parameters),
                       absl::MakeSpan(state_.gradient), &step_metrics_,
                       [&]() -> absl::Status {
                         if (mode_ == SyncMode::kRing && faults_.LostAt("ring_step")) {
                           return faults_.LostStatus();
                         }
                         return absl::OkStatus();
                       },
                       &timing));
  // The trace's step time is the phases' sum, as the step-time histograms and the timeline
  // have it, so the three never disagree about a step.
  if (options_.timeline != nullptr) {
    options_.timeline->RecordStep(state_.completed, generation_, mode_, timing);
  }
  if (trace_) {
    trace_(StepTrace{state_.completed, generation_, mode_, slot_, last_stats_.mean_loss,
                     absl::ToDoubleSeconds(timing.total()), timing.start + timing.total(),
                     state_.parameters, timing});
  }
  state_.completed = sync_->NextStep(state_.completed);
  // The buffer holds the sum this step applied, which a regroup may replay on members behind;
  // not where the shards hold the state (each worker's pulls differ): they hold it now.
  state_.home = ShardsHoldState() ? StateHome::kShards : StateHome::kWorkersWithLastSum;
  if (evaluator_ != nullptr) {
    evaluator_->StepEnded(state_.completed, timing.start, timing.start + timing.total(),
                          last_stats_.mean_loss);
    EvaluateIfDue();
  }
  assignments_.ReportCompletedSteps(static_cast<uint64_t>(state_.completed));
  // A checkpoint that cannot be stored costs durability, not the step: say so and go on.
  if (absl::Status saved = SaveCheckpointIfDue(); !saved.ok()) {
    log_ << WorkerName(slot_.rank) << ": checkpoint of step " << state_.completed
         << " not stored: " << saved << "\n";
    log_.flush();
  }
  // Sampled steps only, outside the step's phases: the step is complete whatever comes of it
  // (a failure here is a broken ring, which the next generation mends).
  return MeasureWireError(step);
}

}  // namespace ringside::worker
