#include "worker/checkpoint_uploads.h"

#include "common/status_macros.h"

namespace ringside::worker {

absl::Status CheckpointUploads::AfterStep(const CompletedStep& step) {
  if (absl::Status saved = SaveIfDue(step); !saved.ok()) {
    log_ << WorkerName(step.generation.slot.rank) << ": checkpoint of step " << step.state.completed
         << " not stored: " << saved << "\n";
    log_.flush();
  }
  return absl::OkStatus();
}

absl::Status CheckpointUploads::SaveIfDue(const CompletedStep& step) {
  const GenerationView& generation = step.generation;
  const MemberState& state = step.state;
  if (generation.slot.rank != 0 || generation.checkpoint_every == 0 ||
      static_cast<uint64_t>(state.completed) % generation.checkpoint_every != 0) {
    return absl::OkStatus();
  }
  // When the shards hold the state, this worker's is its last pull and an optimiser that has not
  // run: the checkpoint is theirs (docs/architecture.md, "Bounded staleness and async").
  if (generation.shards_hold_state) {
    ASSIGN_OR_RETURN(const server::JobState shards, shards_.ReadState(optimizer_));
    return Upload(shards.step, shards.parameters.size(),
                  shards.parameters.size() + shards.optimizer_state.size(),
                  StatePiecesOf(shards.parameters, shards.optimizer_state));
  }
  return Upload(static_cast<uint64_t>(state.completed), state.parameters.size(), state.state_size(),
                [&state](uint64_t offset, absl::Span<float> out) {
                  state.ReadPiece(absl::Span<const float>(), offset, out);
                });
}

absl::Status CheckpointUploads::Upload(uint64_t step, uint64_t parameters, uint64_t state_elements,
                                       const StatePieceReader& read) {
  RETURN_IF_ERROR(assignments_.SaveCheckpoint(step, parameters, state_elements, read));
  metrics_.Checkpoints("uploaded").Increment();
  metrics_.CheckpointBytes("uploaded")
      .Increment(static_cast<double>(state_elements * sizeof(float)));
  return absl::OkStatus();
}

}  // namespace ringside::worker
