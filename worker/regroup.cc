#include "worker/regroup.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/state_pieces.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "worker/regroup_plan.h"

namespace ringside::worker {
namespace {

// NaNs and infinities in the member's parameters and optimiser state, the latter read a piece at
// a time (no copy of the state).
size_t NonFiniteIn(const MemberState& state) {
  size_t non_finite = CountNonFinite(state.parameters);
  if (state.optimizer == nullptr) return non_finite;
  std::vector<float> piece(std::min<size_t>(size_t{1} << 16, state.state_size()));
  for (size_t offset = state.parameters.size(); offset < state.state_size();) {
    const absl::Span<float> out =
        absl::MakeSpan(piece).first(std::min(piece.size(), state.state_size() - offset));
    state.ReadPiece({}, offset, out);
    non_finite += CountNonFinite(out);
    offset += out.size();
  }
  return non_finite;
}

}  // namespace

ring::AllreduceOptions ControlCollectiveOptions(uint64_t segment_bytes, absl::Duration timeout) {
  ring::AllreduceOptions control;
  control.segment_bytes = segment_bytes;
  control.timeout = timeout;
  control.op = ring::ReduceOp::kSum;
  control.control = true;
  return control;
}

Regroup::Regroup(ring::Collective& ring, AssignmentSource& assignments, server::ShardGroup& shards,
                 const TrainingJob& job, MemberState& state, FaultPoints& faults, Metrics& metrics,
                 std::ostream& log, RegroupOptions options)
    : ring_(ring),
      assignments_(assignments),
      shards_(shards),
      job_(job),
      state_(state),
      faults_(faults),
      metrics_(metrics),
      log_(log),
      options_(options) {}

ring::AllreduceOptions Regroup::ControlOptions() const {
  return ControlCollectiveOptions(options_.segment_bytes, options_.timeout);
}

absl::Status Regroup::AgreeOnState(uint64_t generation, int world, int rank,
                                   uint64_t checkpoint_step) {
  const uint64_t base = CollectiveBase(generation);
  Census census(world);
  census.at(kCompletedRow, rank) = static_cast<float>(state_.completed);  // exact up to 2^24
  census.at(kOnShardsRow, rank) = state_.home == StateHome::kShards ? 1.0f : 0.0f;
  census.at(kLastSumRow, rank) = state_.holds_last_sum() ? 1.0f : 0.0f;
  census.at(kNonFiniteRow, rank) = NonFiniteIn(state_) > 0 ? 1.0f : 0.0f;
  census.SetDigest(rank, Checksum(state_.parameters));
  if (faults_.LostAt("census")) return faults_.LostStatus();
  RETURN_IF_ERROR(ring_.Allreduce(base + kCensusCollective, census.values(), ControlOptions()));
  const StatePlan plan = PlanState(census, world, checkpoint_step, options_.replay_last_step);
  if (census.at(kNonFiniteRow, rank) != 0.0f) {
    metrics_.NonFiniteRefused("regroup_state").Increment();
    log_ << WorkerName(rank) << ": its state at step " << state_.completed
         << " holds NaN or infinite values; it takes the job's state from "
         << (plan.from_initial ? "the seeded initial state (no checkpoint)"
                               : "the regroup's source")
         << "\n";
    log_.flush();
  }
  if (plan.from_initial) {
    // Every member decides this alike from the same census: nothing goes over the ring.
    if (faults_.LostAt("state")) return faults_.LostStatus();
    RETURN_IF_ERROR(RestoreInitialState());
    state_.completed = 0;
    state_.ForgetLastSum();
    return absl::OkStatus();
  }
  if (plan.level) {
    // Every member decides this alike from the same census, so no one waits for a hand-over
    // that does not come. The loss point stays where the hand-over would begin.
    if (faults_.LostAt("state")) return faults_.LostStatus();
    return absl::OkStatus();
  }
  bool keeps_own = plan.SameAsSource(census, rank);
  if (plan.replay) {
    const bool replays = plan.Replays(census, rank);
    ASSIGN_OR_RETURN(const bool agreed, ReplayLastStep(base, world, rank, rank == plan.source,
                                                       replays, census.digest(plan.source)));
    if (agreed) {
      if (replays) {
        log_ << WorkerName(rank) << ": replayed step " << state_.completed - 1 << " from "
             << WorkerName(plan.source) << "'s sum\n";
        log_.flush();
        keeps_own = true;  // level with the source now, its digest checked
      }
      if (!plan.left_after_replay) return absl::OkStatus();
    }
    // A replay that did not give the source's parameters (which the same sum on the same state
    // never should): the state goes over whole, as below, to the members that replayed. And
    // members further behind receive it in any case.
  }
  return HandOverState(generation, rank, checkpoint_step, plan.source, plan.from_shards,
                       plan.from_checkpoint, keeps_own);
}

absl::Status Regroup::HandOverState(uint64_t generation, int rank, uint64_t checkpoint_step,
                                    int source, bool from_shards, bool from_checkpoint,
                                    bool keeps_own) {
  const uint64_t base = CollectiveBase(generation);
  // The source broadcasts it (sum-allreduces with -0.0 elsewhere: exact), so every member adopts
  // the very same state: first [ok, step, kept], then [parameters..., optimiser state...] in
  // chunks, or the parameters alone when the shards kept the state (kept: 1).
  std::vector<float> header(3, 0.0f);
  std::vector<float> read;  // the source's, read from the shards or a checkpoint: [ok, step, ...]
  if (rank == source && from_shards && options_.shards_may_keep_state) {
    read.assign(2 + state_.parameters.size(), 0.0f);
    if (KeepShardsState(absl::MakeSpan(read))) {
      header = {read[0], read[1], 1.0f};
    } else {
      read.clear();
    }
  }
  if (read.empty() && rank == source && (from_shards || from_checkpoint)) {
    read.assign(2 + state_.parameters.size() + state_.optimizer->state_size(), 0.0f);
    if (from_shards) {
      ReadShardsState(checkpoint_step, absl::MakeSpan(read));
    } else {
      ReadCheckpoint(checkpoint_step, absl::MakeSpan(read));
    }
    std::copy_n(read.begin(), 2, header.begin());
  } else if (read.empty() && rank == source) {
    header = {1.0f, static_cast<float>(state_.completed), 0.0f};
  }
  if (faults_.LostAt("state")) return faults_.LostStatus();
  RETURN_IF_ERROR(
      ring_.Allreduce(base + kStateCollective, absl::MakeSpan(header), ControlOptions()));
  if (header[0] != 1.0f) {
    return absl::UnavailableError(absl::StrCat(
        WorkerName(source), " could not read ",
        from_shards ? std::string("the job's state from the shards, nor a checkpoint")
                    : absl::StrCat("the controller's checkpoint of step ", checkpoint_step),
        "; see its log"));
  }
  const absl::Span<const float> held =
      read.empty() ? absl::Span<const float>() : absl::MakeConstSpan(read).subspan(2);
  // A member that never completed a step holds the seeded initial state, which it can make
  // again: it adopts the state in place, with no room beside its own (a joiner held 2K floats
  // more with Adam, 58 MiB on the 4x model), and should the hand-over fail midway it makes the
  // initial state again, so a torn state never enters a census.
  const bool in_place = !keeps_own && held.empty() && state_.completed == 0;
  const bool kept = header[2] == 1.0f;
  const absl::Status broadcast =
      BroadcastState(base, rank == source, !keeps_own, in_place, kept, held);
  if (!broadcast.ok() && in_place && !faults_.lost()) {
    log_ << WorkerName(rank) << ": the state's hand-over failed midway; back to the initial state "
         << "(step 0) until the next regroup\n";
    log_.flush();
    RETURN_IF_ERROR(RestoreInitialState());
  }
  RETURN_IF_ERROR(broadcast);
  if (!keeps_own) state_.completed = static_cast<int64_t>(header[1]);
  // The gradient's buffer holds the last step's sum only where the state stayed this member's.
  if (!keeps_own) state_.ForgetLastSum();
  if (kept) {
    // Every member holds the parameters now, and the shards, which train on, the whole state.
    state_.home = StateHome::kShards;
    shards_kept_state_ = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Regroup::ReplayLastStep(uint64_t base, int world, int rank, bool source,
                                             bool behind, uint64_t source_digest) {
  // The source's gradient buffer holds the sum its last step applied. Everyone else adds -0.0,
  // the exact identity of a float sum (+0.0 would turn a -0.0 of the sum into +0.0).
  state_.gradient.resize(state_.parameters.size());
  state_.ForgetLastSum();  // until the sum is in every member's buffer
  if (!source) std::fill(state_.gradient.begin(), state_.gradient.end(), -0.0f);
  if (faults_.LostAt("replay")) return faults_.LostStatus();
  RETURN_IF_ERROR(
      ring_.Allreduce(base + kReplayCollective, absl::MakeSpan(state_.gradient), ControlOptions()));
  state_.home = StateHome::kWorkersWithLastSum;  // every member's buffer holds it now
  std::vector<float> diverged(static_cast<size_t>(world), 0.0f);
  if (behind) {
    // Should the source be lost before this, the member still holds its own state, whole.
    RETURN_IF_ERROR(state_.optimizer->Step(absl::MakeSpan(state_.parameters), state_.gradient));
    state_.completed += 1;
    diverged[static_cast<size_t>(rank)] =
        Checksum(state_.parameters) == source_digest ? 0.0f : 1.0f;
  }
  RETURN_IF_ERROR(
      ring_.Allreduce(base + kReplayCheckCollective, absl::MakeSpan(diverged), ControlOptions()));
  return std::all_of(diverged.begin(), diverged.end(), [](float f) { return f == 0.0f; });
}

absl::Status Regroup::BroadcastState(uint64_t base, bool source, bool adopt, bool in_place,
                                     bool parameters_only, absl::Span<const float> held) {
  const size_t parameters = state_.parameters.size();
  const size_t total = parameters + (parameters_only ? 0 : state_.optimizer->state_size());
  const size_t chunk_floats = std::min(total, std::max<size_t>(1, options_.state_chunk_floats));
  if (total / chunk_floats >= kLoadedCollective - kFirstStateChunkCollective) {
    return absl::InvalidArgumentError("the state needs more chunks than a regroup may number");
  }
  // Any other member adopting the state receives it whole before it replaces its own: should
  // the source be lost midway, it still holds what it had, and a later regroup may take that.
  // (The source of a state it read elsewhere holds it already.) The parameters go into the
  // gradient's buffer, idle in a regroup, and the optimiser's state into a buffer of its size,
  // not zeroed first (its pages are touched as the chunks arrive): the room it takes is the
  // optimiser's state, not a copy of the whole state.
  const bool receive_whole = adopt && held.empty() && !in_place;
  std::unique_ptr<float[]> optimizer_state;
  if (receive_whole) {
    state_.gradient.resize(parameters);
    state_.ForgetLastSum();
    optimizer_state.reset(new float[total - parameters]);
  }
  std::vector<float>& parameters_to = in_place ? state_.parameters : state_.gradient;
  // Where a received piece of [parameters..., optimiser state...] lands directly; empty when it
  // goes through `chunk` instead (it straddles the two parts, or, in place, holds optimiser
  // state, which the optimiser imports a piece at a time).
  const auto destination = [&](size_t offset, size_t count) -> absl::Span<float> {
    if (!receive_whole && !in_place) return absl::Span<float>();
    if (offset + count <= parameters) return absl::MakeSpan(parameters_to).subspan(offset, count);
    if (receive_whole && offset >= parameters) {
      return absl::MakeSpan(optimizer_state.get() + (offset - parameters), count);
    }
    return absl::Span<float>();
  };
  // A piece received through `chunk`, to where it belongs.
  const auto land = [&](size_t offset, absl::Span<const float> piece) -> absl::Status {
    const StatePieceSplit split = SplitStatePiece(offset, piece.size(), parameters);
    std::copy_n(piece.begin(), split.in_parameters, parameters_to.begin() + offset);
    const absl::Span<const float> rest = piece.subspan(split.in_parameters);
    if (rest.empty()) return absl::OkStatus();
    if (in_place) return state_.optimizer->ImportStatePiece(split.state_offset, rest);
    std::copy(rest.begin(), rest.end(), optimizer_state.get() + split.state_offset);
    return absl::OkStatus();
  };
  std::vector<float> chunk;
  for (size_t offset = 0, c = 0; offset < total; offset += chunk_floats, ++c) {
    if (c == 1 && faults_.LostAt("state_chunk")) return faults_.LostStatus();
    const size_t count = std::min(chunk_floats, total - offset);
    absl::Span<float> piece = destination(offset, count);
    const bool through_chunk = piece.empty();
    if (through_chunk) {
      chunk.resize(chunk_floats);
      piece = absl::MakeSpan(chunk).first(count);
    }
    // -0.0, the exact identity of a float sum: +0.0 would turn the source's -0.0 into +0.0.
    std::fill(piece.begin(), piece.end(), -0.0f);
    if (source) state_.ReadPiece(held, offset, piece);
    RETURN_IF_ERROR(
        ring_.Allreduce(base + kFirstStateChunkCollective + c, piece, ControlOptions()));
    if ((receive_whole || in_place) && through_chunk) {
      RETURN_IF_ERROR(land(offset, piece));
      if (receive_whole) std::vector<float>().swap(chunk);  // the only piece that straddles
    }
  }
  if (!adopt || in_place) return absl::OkStatus();
  if (receive_whole) {
    if (!parameters_only) {
      RETURN_IF_ERROR(state_.optimizer->ImportState(
          absl::MakeConstSpan(optimizer_state.get(), total - parameters)));
    }
    std::copy_n(state_.gradient.begin(), parameters, state_.parameters.begin());
    return absl::OkStatus();
  }
  if (!parameters_only) RETURN_IF_ERROR(state_.optimizer->ImportState(held.subspan(parameters)));
  std::copy_n(held.begin(), parameters, state_.parameters.begin());
  return absl::OkStatus();
}

absl::Status Regroup::RestoreInitialState() {
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(state_.optimizer->config(), state_.optimizer->size()));
  *state_.optimizer = std::move(optimizer);
  state_.parameters = job_.InitialParameters();
  return absl::OkStatus();
}

void Regroup::ReadCheckpoint(uint64_t checkpoint_step, absl::Span<float> state) {
  const size_t parameters = state_.parameters.size();
  const absl::Status loaded = assignments_.LoadCheckpoint(
      checkpoint_step, state.subspan(2, parameters), state.subspan(2 + parameters));
  if (!loaded.ok()) {
    log_ << WorkerName(0) << ": cannot read the controller's checkpoint: " << loaded << "\n";
    std::fill(state.begin(), state.end(), 0.0f);
    return;
  }
  state[0] = 1.0f;
  state[1] = static_cast<float>(checkpoint_step);
  metrics_.Checkpoints("restored").Increment();
  metrics_.CheckpointBytes("restored")
      .Increment(static_cast<double>((state.size() - 2) * sizeof(float)));
}

void Regroup::ReadShardsState(uint64_t checkpoint_step, absl::Span<float> state) {
  std::fill(state.begin(), state.end(), 0.0f);
  absl::StatusOr<server::JobState> read = shards_.ReadState(job_.options().optimizer);
  if (read.ok() && read->optimizer_state.size() != state.size() - 2 - state_.parameters.size()) {
    read = absl::InternalError("the shards' optimiser state does not fit this worker's");
  }
  if (read.ok()) {
    const size_t non_finite =
        CountNonFinite(read->parameters) + CountNonFinite(read->optimizer_state);
    if (non_finite > 0) {
      metrics_.NonFiniteRefused("regroup_state").Increment();
      read =
          absl::DataLossError(absl::StrCat("their state at step ", read->step, " has ", non_finite,
                                           " values NaN or infinite, which no regroup adopts"));
    }
  }
  if (!read.ok()) {
    // A shard lost (its replacement holds nothing) lost its range: the newest checkpoint is the
    // job's last whole state, and the steps after it are trained again.
    log_ << WorkerName(0)
         << ": cannot read the job's state from the shards (they held it): " << read.status()
         << (checkpoint_step > 0
                 ? absl::StrCat("; falling back to the controller's checkpoint of step ",
                                checkpoint_step)
                 : std::string("; no checkpoint to fall back to"))
         << "\n";
    log_.flush();
    if (checkpoint_step > 0) ReadCheckpoint(checkpoint_step, state);
    return;
  }
  state[0] = 1.0f;
  state[1] = static_cast<float>(read->step);
  std::copy(read->parameters.begin(), read->parameters.end(), state.begin() + 2);
  std::copy(read->optimizer_state.begin(), read->optimizer_state.end(),
            state.begin() + 2 + static_cast<ptrdiff_t>(state_.parameters.size()));
  log_ << WorkerName(0) << ": read the job's state at step " << read->step
       << " from the shards, which held it\n";
  log_.flush();
}

bool Regroup::KeepShardsState(absl::Span<float> state) {
  std::fill(state.begin(), state.end(), 0.0f);
  // The parameters as the shards now serve them in this generation, at the step they all resume
  // at (a worker cut off between its pushes to two shards left them a step apart: they are kept
  // at the later one, as a whole read would join them).
  const absl::StatusOr<uint64_t> kept = shards_.KeepServedStates(job_.options().optimizer.kind);
  absl::StatusOr<uint64_t> step =
      kept.ok() ? server::ReadShardParameters(shards_.transfer(), state.subspan(2)) : kept;
  if (step.ok() && *step != *kept) {
    step = absl::AbortedError(absl::StrCat("the shards kept step ", *kept, " but served ", *step));
  }
  if (step.ok() && CountNonFinite(state.subspan(2)) > 0) {
    step = absl::DataLossError("their parameters hold NaN or infinite values");
  }
  if (!step.ok()) {
    log_ << WorkerName(0) << ": the shards did not keep the job's state (" << step.status()
         << "); reading the whole of it from them\n";
    log_.flush();
    return false;
  }
  state[0] = 1.0f;
  state[1] = static_cast<float>(*step);
  log_ << WorkerName(0) << ": the shards kept the job's state at step " << *step
       << "; read its parameters from them\n";
  log_.flush();
  return true;
}

absl::Status Regroup::LoadShards(uint64_t generation, int rank) {
  if (shards_kept_state_) return absl::OkStatus();  // every member learnt it from the header
  // Rank 0 loads the shards; the barrier carries whether it managed, so no one pushes to a
  // shard still serving an older generation.
  std::vector<float> loaded = {0.0f};
  if (rank == 0) {
    if (faults_.LostAt("load")) return faults_.LostStatus();
    const server::JobStateView state{static_cast<uint64_t>(state_.completed), state_.parameters,
                                     state_.optimizer.get()};
    const absl::Status status = shards_.Load(state);
    if (!status.ok()) {
      log_ << WorkerName(rank) << ": " << status << "\n";
      loaded[0] = 1.0f;
    }
  }
  if (faults_.LostAt("barrier")) return faults_.LostStatus();
  RETURN_IF_ERROR(ring_.Allreduce(CollectiveBase(generation) + kLoadedCollective,
                                  absl::MakeSpan(loaded), ControlOptions()));
  if (loaded[0] != 0.0f) {
    return absl::UnavailableError("worker-0 could not load the shards for this generation");
  }
  return absl::OkStatus();
}

}  // namespace ringside::worker
