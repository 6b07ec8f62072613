#include "server/ps/shard_transfer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "common/state_pieces.h"
#include "common/status_macros.h"
#include "proto/ps.grpc.pb.h"

namespace ringside::server {
namespace {

absl::Status ShardError(const grpc::Status& status, int shard, absl::string_view what) {
  return Annotate(FromGrpcStatus(status), absl::StrCat(what, " ", PsShardName(shard)));
}

// A call to shard `shard` with the options' deadline and, when given, its load key.
void PrepareShardCall(const ShardTransferOptions& options, int shard,
                      grpc::ClientContext& context) {
  SetDeadline(context, options.timeout);
  if (static_cast<size_t>(shard) < options.keys.size()) {
    context.AddMetadata(kLinkKeyMetadata, options.keys[shard]);
  }
}

// A Load's header for shard `range` of `generation` with `workers` workers, its state laid out
// for an optimiser of `kind`.
proto::PsStateSegment LoadHeader(const ElementRange& range, uint64_t generation, int workers,
                                 OptimizerKind kind) {
  proto::PsStateSegment segment;
  segment.set_generation(generation);
  segment.set_workers(static_cast<uint32_t>(workers));
  segment.set_range_begin(range.begin);
  segment.set_range_elements(range.size());
  segment.set_state_elements(range.size() + Optimizer::StateSize(kind, range.size()));
  return segment;
}

// Shard `shard`'s Load stream: `write` sends its segments; the shard's reply goes into
// `replied` when given.
absl::Status StreamLoad(
    const ShardTransferOptions& options, int shard, uint64_t generation,
    const std::function<void(grpc::ClientWriter<proto::PsStateSegment>&)>& write,
    proto::PsLoadReply* replied = nullptr) {
  auto stub = proto::ParameterShard::NewStub(MakeChannel(options.shards[shard], options.security));
  grpc::ClientContext context;
  PrepareShardCall(options, shard, context);
  // What the load key claims, checked by the shard before it reads the state.
  context.AddMetadata(kLinkGenerationMetadata, absl::StrCat(generation));
  proto::PsLoadReply reply;
  auto writer = stub->Load(&context, &reply);
  write(*writer);
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) return ShardError(status, shard, "loading");
  if (replied != nullptr) *replied = reply;
  return absl::OkStatus();
}

absl::Status LoadShard(const ShardTransferOptions& options, int shard, const ElementRange& range,
                       uint64_t generation, int workers, const JobStateView& state) {
  proto::PsStateSegment segment =
      LoadHeader(range, generation, workers, state.optimizer->config().kind);
  segment.set_step(state.step);
  const uint64_t state_elements = segment.state_elements();
  return StreamLoad(
      options, shard, generation, [&](grpc::ClientWriter<proto::PsStateSegment>& writer) {
        const uint64_t per_segment = std::max<uint64_t>(1, options.segment_bytes / sizeof(float));
        for (uint64_t offset = 0; offset < state_elements; offset += per_segment) {
          const uint64_t count = std::min<uint64_t>(per_segment, state_elements - offset);
          segment.set_offset(offset);
          std::string& payload = *segment.mutable_payload();
          payload.resize(count * sizeof(float));
          // Within the state: LoadShards checked that the optimiser owns the parameters.
          state.CopyRange(range, offset,
                          absl::MakeSpan(reinterpret_cast<float*>(payload.data()), count));
          if (!writer.Write(segment)) break;  // Finish() says why
        }
      });
}

// A sink that copies into `out` (elements from its start).
ValuesSink IntoSpan(absl::Span<float> out) {
  return [out](uint64_t offset, absl::string_view bytes) {
    if (!bytes.empty()) std::memcpy(out.data() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  };
}

// Reads `name`'s stream of float segments (PsRangeValues, PsStateSegment) into `sink`: as many
// elements as `expected` says from the first segment's header (checked against what the reader
// knows, never trusted), each segment continuing the last at its offset, holding whole floats
// within that count, carrying the first one's step and fitting `header_fits` (its range's
// length, say). `what` names the values in errors. Returns the step they carry.
template <typename Segment>
absl::StatusOr<uint64_t> ReadSegments(
    grpc::ClientReader<Segment>& reader, grpc::ClientContext& context, absl::string_view name,
    absl::string_view what, const std::function<bool(const Segment&)>& header_fits,
    const std::function<absl::StatusOr<uint64_t>(const Segment& first)>& expected_of,
    const ValuesSink& sink) {
  Segment segment;
  uint64_t received = 0;
  uint64_t expected = 0;
  std::optional<uint64_t> step;
  absl::Status bad;
  while (bad.ok() && reader.Read(&segment)) {
    if (!step.has_value()) {
      absl::StatusOr<uint64_t> size = expected_of(segment);
      if (!size.ok()) {
        bad = Annotate(size.status(), absl::StrCat(name, "'s ", what));
        context.TryCancel();
        break;
      }
      expected = *size;
    }
    const uint64_t count = segment.payload().size() / sizeof(float);
    if (!header_fits(segment) || segment.offset() != received ||
        segment.payload().size() % sizeof(float) != 0 || count > expected - received ||
        (step.has_value() && *step != segment.step())) {
      bad = absl::InvalidArgumentError(absl::StrCat(
          name, "'s ", what, " do not fit its range of ", expected,
          " elements: a segment at offset ", segment.offset(), " of ", segment.range_elements(),
          " with ", segment.payload().size(), " payload bytes after ", received));
    } else {
      bad = sink(received, segment.payload());
    }
    if (!bad.ok()) {
      context.TryCancel();
      break;
    }
    step = segment.step();
    received += count;
  }
  const grpc::Status status = reader.Finish();
  RETURN_IF_ERROR(bad);
  if (!status.ok()) {
    return Annotate(FromGrpcStatus(status), absl::StrCat("reading the ", what, " of ", name));
  }
  if (!step.has_value() || received != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " sent ", received, " of its ", expected, " ", what));
  }
  return *step;
}

// Shard `shard`'s range, as elements [range.begin, range.end) of `sink`'s; the step it holds.
absl::StatusOr<uint64_t> ReadShard(const ShardTransferOptions& options, int shard,
                                   const ElementRange& range, const ValuesSink& sink) {
  auto stub = proto::ParameterShard::NewStub(
      MakeChannel(options.shards[shard], options.security, ChannelUse::kBackgroundRead));
  grpc::ClientContext context;
  PrepareShardCall(options, shard, context);
  // What the load key claims: an elastic shard checks it before it says anything.
  if (options.generation != 0) {
    context.AddMetadata(kLinkGenerationMetadata, absl::StrCat(options.generation));
  }
  auto reader = stub->GetParameters(&context, proto::PsRangeRequest());
  return ReadSegments<proto::PsRangeValues>(
      *reader, context, PsShardName(shard), "parameters",
      [&](const proto::PsRangeValues& segment) { return segment.range_elements() == range.size(); },
      [&](const proto::PsRangeValues&) -> absl::StatusOr<uint64_t> { return range.size(); },
      [&](uint64_t offset, absl::string_view bytes) { return sink(range.begin + offset, bytes); });
}

// One shard's resumable state as it sent it: the range it says it holds (checked to lie within
// the parameters), the generation it served it in, and the step it resumes at.
struct StatePiece {
  ElementRange range;
  uint64_t served = 0;
  uint64_t step = 0;
  std::vector<float> state;  // [parameters..., optimiser state...] of the range
};

// The resumable state of the shard at `address` (`name` in errors), read with `key` for
// `generation`'s rank 0. Its size is the range's, as the shard names it, but never past the
// parameters.
absl::StatusOr<StatePiece> ReadShardState(const ShardTransferOptions& options,
                                          const std::string& address, const std::string& key,
                                          absl::string_view name, uint64_t generation,
                                          uint64_t parameter_count, OptimizerKind kind) {
  auto stub = proto::ParameterShard::NewStub(MakeChannel(address, options.security));
  grpc::ClientContext context;
  SetDeadline(context, options.timeout);
  if (!key.empty()) context.AddMetadata(kLinkKeyMetadata, key);
  proto::PsStateRequest request;
  request.set_generation(generation);
  auto reader = stub->ReadState(&context, request);
  StatePiece piece;
  const auto expected_of = [&](const proto::PsStateSegment& first) -> absl::StatusOr<uint64_t> {
    if (first.range_begin() > parameter_count ||
        first.range_elements() > parameter_count - first.range_begin()) {
      return absl::InvalidArgumentError(absl::StrCat("range [", first.range_begin(), ", +",
                                                     first.range_elements(), ") is not within the ",
                                                     parameter_count, " parameters"));
    }
    const uint64_t elements =
        first.range_elements() + Optimizer::StateSize(kind, first.range_elements());
    if (first.state_elements() != elements) {
      return absl::InvalidArgumentError(absl::StrCat("state of ", first.state_elements(),
                                                     " elements for a range of ",
                                                     first.range_elements(), ": not ", elements));
    }
    piece.range = {first.range_begin(), first.range_begin() + first.range_elements()};
    piece.served = first.generation();
    piece.state.resize(elements);
    return elements;
  };
  ASSIGN_OR_RETURN(piece.step, ReadSegments<proto::PsStateSegment>(
                                   *reader, context, name, "state values",
                                   [&](const proto::PsStateSegment& segment) {
                                     return segment.range_begin() == piece.range.begin &&
                                            segment.range_elements() == piece.range.size() &&
                                            segment.state_elements() == piece.state.size() &&
                                            segment.generation() == piece.served;
                                   },
                                   expected_of,
                                   [&](uint64_t offset, absl::string_view bytes) {
                                     if (!bytes.empty())
                                       std::memcpy(piece.state.data() + offset, bytes.data(),
                                                   bytes.size());
                                     return absl::OkStatus();
                                   }));
  return piece;
}

// Whether the non-empty ranges of `pieces` lie end to end over [0, parameter_count): each element
// once.
bool CoverTheParameters(std::vector<const StatePiece*> pieces, uint64_t parameter_count) {
  std::sort(pieces.begin(), pieces.end(), [](const StatePiece* a, const StatePiece* b) {
    return a->range.begin < b->range.begin;
  });
  uint64_t covered = 0;
  for (const StatePiece* piece : pieces) {
    if (piece->range.size() == 0) continue;
    if (piece->range.begin != covered) return false;
    covered = piece->range.end;
  }
  return covered == parameter_count;
}

// The pieces of the newest generation served that cover the parameters; empty when none do.
std::vector<const StatePiece*> CoveringPieces(const std::vector<StatePiece>& pieces,
                                              uint64_t parameter_count) {
  std::vector<uint64_t> served;
  for (const StatePiece& piece : pieces) served.push_back(piece.served);
  std::sort(served.rbegin(), served.rend());
  served.erase(std::unique(served.begin(), served.end()), served.end());
  for (uint64_t generation : served) {
    std::vector<const StatePiece*> of_generation;
    for (const StatePiece& piece : pieces) {
      if (piece.served == generation) of_generation.push_back(&piece);
    }
    if (CoverTheParameters(of_generation, parameter_count)) return of_generation;
  }
  return {};
}

}  // namespace

void JobStateView::CopyRange(const ElementRange& range, uint64_t offset,
                             absl::Span<float> out) const {
  // The range's parameters, then its optimiser state.
  const StatePieceSplit split = SplitStatePiece(offset, out.size(), range.size());
  if (split.in_parameters > 0) {
    std::copy_n(parameters.begin() + range.begin + offset, split.in_parameters, out.begin());
  }
  if (split.in_state == 0) return;
  optimizer
      ->ExportRangeStatePiece(range.begin, range.end, split.state_offset,
                              out.subspan(split.in_parameters))
      .IgnoreError();
}

absl::StatusOr<JobState> ReadShardStates(const ShardTransferOptions& options, uint64_t generation,
                                         uint64_t parameter_count,
                                         const OptimizerConfig& optimizer) {
  // Every shard's piece as it holds it: the generation's shard map may be another (a shard left
  // or joined), and a replacement holds nothing (its read fails).
  std::vector<StatePiece> pieces;
  std::vector<absl::Status> failed;
  const auto read = [&](const std::string& address, const std::string& key,
                        const std::string& name) {
    absl::StatusOr<StatePiece> piece =
        ReadShardState(options, address, key, name, generation, parameter_count, optimizer.kind);
    if (piece.ok()) {
      pieces.push_back(*std::move(piece));
    } else {
      failed.push_back(piece.status());
    }
  };
  for (size_t s = 0; s < options.shards.size(); ++s) {
    read(options.shards[s], s < options.keys.size() ? options.keys[s] : "",
         PsShardName(static_cast<int>(s)));
  }
  std::vector<const StatePiece*> covering = CoveringPieces(pieces, parameter_count);
  // Shards that left holding their ranges (a drain): read only when the others lack a range.
  if (covering.empty() && !options.departed.empty()) {
    for (size_t d = 0; d < options.departed.size(); ++d) {
      read(options.departed[d], d < options.departed_keys.size() ? options.departed_keys[d] : "",
           absl::StrCat("the departed shard at ", options.departed[d]));
    }
    covering = CoveringPieces(pieces, parameter_count);
  }
  if (covering.empty()) {
    if (!failed.empty()) return failed.front();
    return absl::InvalidArgumentError(absl::StrCat("the shards' ranges do not cover the ",
                                                   parameter_count, " parameters exactly"));
  }
  JobState job;
  job.parameters.resize(parameter_count);
  job.optimizer_state.resize(Optimizer::StateSize(optimizer.kind, parameter_count));
  for (const StatePiece* piece : covering) {
    const ElementRange& range = piece->range;
    std::copy(piece->state.begin(), piece->state.begin() + static_cast<ptrdiff_t>(range.size()),
              job.parameters.begin() + static_cast<ptrdiff_t>(range.begin));
    RETURN_IF_ERROR(PlaceOptimizerStateRange(
        absl::MakeConstSpan(piece->state).subspan(range.size()), parameter_count, range.begin,
        range.end, absl::MakeSpan(job.optimizer_state)));
    // A worker lost between its pushes to two shards completed a step on one only.
    job.step = std::max(job.step, piece->step);
  }
  job.optimizer_state[0] = static_cast<float>(job.step);
  return job;
}

absl::StatusOr<uint64_t> ReadShardParameters(const ShardTransferOptions& options,
                                             uint64_t parameter_count, const ValuesSink& sink) {
  const std::vector<ElementRange> ranges =
      EvenRanges(parameter_count, static_cast<int>(options.shards.size()));
  // All at once, each into its own range: a shard in the middle of a step answers at the step's
  // end, which in a synchronous job is about when the others end it too. Read one after another,
  // a later shard was read a step after an earlier one more often than not.
  std::vector<absl::StatusOr<uint64_t>> steps(options.shards.size(), uint64_t{0});
  std::vector<std::thread> readers;
  for (size_t s = 0; s < options.shards.size(); ++s) {
    readers.emplace_back(
        [&, s] { steps[s] = ReadShard(options, static_cast<int>(s), ranges[s], sink); });
  }
  for (std::thread& reader : readers) reader.join();
  for (size_t s = 0; s < steps.size(); ++s) {
    RETURN_IF_ERROR(steps[s].status());
    if (*steps[s] != *steps[0]) {
      return absl::AbortedError(absl::StrCat(PsShardName(0), " held step ", *steps[0], ", ",
                                             PsShardName(static_cast<int>(s)), " step ", *steps[s],
                                             " when read"));
    }
  }
  return steps.empty() ? uint64_t{0} : *steps[0];
}

absl::StatusOr<uint64_t> ReadShardParameters(const ShardTransferOptions& options,
                                             absl::Span<float> out) {
  return ReadShardParameters(options, out.size(), IntoSpan(out));
}

absl::StatusOr<uint64_t> KeepShardStates(const ShardTransferOptions& options, uint64_t generation,
                                         int workers, uint64_t parameter_count,
                                         OptimizerKind kind) {
  const std::vector<ElementRange> ranges =
      EvenRanges(parameter_count, static_cast<int>(options.shards.size()));
  // Each shard keeps its state at the latest step any before it resumed at; one behind that
  // (a worker cut off between its pushes) is kept once more at that step, as a whole read joins
  // the shards at the most advanced one's step. The steps only rise, so two rounds suffice.
  uint64_t step = 0;
  for (int round = 0; round < 2; ++round) {
    bool level = true;
    for (size_t s = 0; s < options.shards.size(); ++s) {
      proto::PsStateSegment keep = LoadHeader(ranges[s], generation, workers, kind);
      keep.set_keep_served_state(true);
      keep.set_step(step);
      proto::PsLoadReply reply;
      RETURN_IF_ERROR(StreamLoad(
          options, static_cast<int>(s), generation,
          [&](grpc::ClientWriter<proto::PsStateSegment>& writer) {
            writer.Write(keep);  // Finish() says why not
          },
          &reply));
      if (s > 0 && reply.step() != step) level = false;
      step = std::max(step, reply.step());
    }
    if (level) return step;
  }
  return absl::InternalError("the shards resumed at different steps after a second keep");
}

absl::Status LoadShards(const ShardTransferOptions& options, uint64_t generation, int workers,
                        const JobStateView& state) {
  if (state.optimizer == nullptr || state.optimizer->size() != state.parameters.size()) {
    return absl::InvalidArgumentError("a job state whose optimiser does not own its parameters");
  }
  const std::vector<ElementRange> ranges =
      EvenRanges(state.parameters.size(), static_cast<int>(options.shards.size()));
  for (size_t s = 0; s < options.shards.size(); ++s) {
    RETURN_IF_ERROR(LoadShard(options, static_cast<int>(s), ranges[s], generation, workers, state));
  }
  return absl::OkStatus();
}

}  // namespace ringside::server
