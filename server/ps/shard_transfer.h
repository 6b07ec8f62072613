// The worker's side of the shards' state hand-over (ParameterShard.Load in proto/ps.proto): an
// elastic job's parameters and optimiser state moved onto the shards when a ps-mode generation
// begins. Nothing moves back for synchronous training: every worker holds the whole state then.
// When the shards hold it (--staleness, async, --backup_workers), a later generation's rank 0
// reads it back (ReadShardStates), from a shard that left holding its range too (a drain).
// The one reader of the shards' live model (GetParameters) is rank 0's test evaluator
// (worker/accuracy_evaluator.h). The shard map is EvenRanges(K, S), as everywhere. Not training
// traffic: nothing is counted in the link metrics.
// Thread-compatible. Errors: a shard's gRPC status annotated with the shard.
#ifndef RINGSIDE_SERVER_PS_SHARD_TRANSFER_H_
#define RINGSIDE_SERVER_PS_SHARD_TRANSFER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "common/transport_security.h"

namespace ringside::server {

struct JobState {
  uint64_t step = 0;                   // steps applied
  std::vector<float> parameters;       // K
  std::vector<float> optimizer_state;  // Optimizer::ExportState() of the whole vector
};

struct ShardTransferOptions {
  std::vector<std::string> shards;  // addresses in shard order
  uint64_t segment_bytes = uint64_t{1} << 20;
  absl::Duration timeout = absl::Seconds(60);  // per shard
  std::vector<std::string> keys;               // load key per shard (common/auth.h); or none
  // The generation whose load keys `keys` are, claimed beside them where a read names none of its
  // own (GetParameters); 0: none claimed (a static job, which has no keys).
  uint64_t generation = 0;
  // Shards that left the job still holding their range of the state (a drain), with the read
  // key of each: ReadShardStates reads them when `shards` alone do not cover the parameters.
  std::vector<std::string> departed;
  std::vector<std::string> departed_keys;
  TransportSecurity security;  // of the channels to the shards
};

// The job's state as a worker holds it, read in place: LoadShards copies one segment at a time
// into the message it writes, so loading the shards costs no copy of the model.
struct JobStateView {
  uint64_t step = 0;                     // steps applied
  absl::Span<const float> parameters;    // K
  const Optimizer* optimizer = nullptr;  // its state goes with the parameters; over K

  // Elements [offset, offset + out.size()) of `range`'s state: its parameters, then its
  // optimiser state (Optimizer::ExportRangeStatePiece), what a shard owning it is loaded with.
  // The whole job's, range [0, K), is the parameters then ExportState()'s layout. Requires the
  // optimiser over K and the piece within.
  void CopyRange(const ElementRange& range, uint64_t offset, absl::Span<float> out) const;
};

// Hands every shard its range of `state` for `generation` with `workers` workers.
absl::Status LoadShards(const ShardTransferOptions& options, uint64_t generation, int workers,
                        const JobStateView& state);

// Asks every shard to keep the state it serves for `generation` with `workers` workers
// (PsStateSegment.keep_served_state): a regroup whose shard map and optimiser (`kind`, over
// `parameter_count` parameters) are the last generation's, when the shards hold the state.
// Returns the step they all resume at: the most advanced shard's, as ReadShardStates joins them.
// NOT_FOUND from a shard holding none to keep (a replacement, another map), whose range of the
// state is then lost to any reader too (the shards before it went on with theirs); Load's
// refusals otherwise.
absl::StatusOr<uint64_t> KeepShardStates(const ShardTransferOptions& options, uint64_t generation,
                                         int workers, uint64_t parameter_count, OptimizerKind kind);

// Where read values go: `bytes` (whole floats) are elements [offset, ...) of the destination.
// Called from one thread per shard at once, for disjoint elements. An error ends the read.
using ValuesSink = std::function<absl::Status(uint64_t offset, absl::string_view bytes)>;

// The shards' live parameters, joined: every shard's range of `parameter_count` as GetParameters
// streams it (the load keys, when given, authorise the reads) into `sink`, a segment at a time,
// so the reader holds no copy of the model (the test evaluator's sink is a file). Reads every shard
// once, all at once: the step the shards held. ABORTED when the shards hold different steps (one
// applied a step the other had not yet when read: read again; what the sink got is then part one
// step, part another); INVALID_ARGUMENT when a reply does not cover its range exactly; the sink's
// error; a shard's gRPC status annotated with it.
absl::StatusOr<uint64_t> ReadShardParameters(const ShardTransferOptions& options,
                                             uint64_t parameter_count, const ValuesSink& sink);
// The same into `out` (K floats).
absl::StatusOr<uint64_t> ReadShardParameters(const ShardTransferOptions& options,
                                             absl::Span<float> out);

// The job's state when the shards hold it: every shard's range of the parameters and of the
// optimiser state (ParameterShard.ReadState, authorised by `generation`'s load keys), joined in
// `optimizer`'s layout for `parameter_count` parameters, at the most steps any shard resumes at
// (the optimiser's step count too). Each shard says which range it holds (that of the generation
// it served, which may be another shard map than `generation`'s); the ranges served in one
// generation, the newest that covers every parameter exactly once, are joined; when the shards'
// do not, the departed shards' are read too. None covering: the first failed read's status
// (FAILED_PRECONDITION from a shard whose workers hold the state; a shard's gRPC status annotated
// with it: a replacement shard serves nothing), else INVALID_ARGUMENT (the ranges do not cover
// the parameters, or a reply does not fit its range).
absl::StatusOr<JobState> ReadShardStates(const ShardTransferOptions& options, uint64_t generation,
                                         uint64_t parameter_count,
                                         const OptimizerConfig& optimizer);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SHARD_TRANSFER_H_
