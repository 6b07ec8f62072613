#include "ps/shard_transfer.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "proto/ps.grpc.pb.h"

namespace ringside::worker {
namespace {

absl::Status ShardError(const grpc::Status& status, int shard, absl::string_view what) {
  return Annotate(FromGrpcStatus(status), absl::StrCat(what, " ", PsShardName(shard)));
}

absl::Status LoadShard(const ShardTransferOptions& options, int shard, const ElementRange& range,
                       uint64_t generation, int workers, const JobState& state) {
  std::vector<float> sequence(state.parameters.begin() + range.begin,
                              state.parameters.begin() + range.end);
  const std::vector<float> optimizer =
      OptimizerStateRange(state.optimizer_state, state.parameters.size(), range.begin, range.end);
  sequence.insert(sequence.end(), optimizer.begin(), optimizer.end());

  auto stub = proto::ParameterShard::NewStub(MakeChannel(options.shards[shard]));
  grpc::ClientContext context;
  SetDeadline(context, options.timeout);
  proto::PsLoadReply reply;
  auto writer = stub->Load(&context, &reply);
  proto::PsStateSegment segment;
  segment.set_generation(generation);
  segment.set_workers(static_cast<uint32_t>(workers));
  segment.set_step(state.step);
  segment.set_range_begin(range.begin);
  segment.set_range_elements(range.size());
  segment.set_state_elements(sequence.size());
  const uint64_t per_segment = std::max<uint64_t>(1, options.segment_bytes / sizeof(float));
  for (uint64_t offset = 0; offset < sequence.size(); offset += per_segment) {
    const uint64_t count = std::min<uint64_t>(per_segment, sequence.size() - offset);
    segment.set_offset(offset);
    segment.set_payload(reinterpret_cast<const char*>(sequence.data() + offset),
                        count * sizeof(float));
    if (!writer->Write(segment)) break;  // Finish() says why
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) return ShardError(status, shard, "loading");
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadShards(const ShardTransferOptions& options, uint64_t generation, int workers,
                        const JobState& state) {
  const std::vector<ElementRange> ranges =
      EvenRanges(state.parameters.size(), static_cast<int>(options.shards.size()));
  for (size_t s = 0; s < options.shards.size(); ++s) {
    RETURN_IF_ERROR(LoadShard(options, static_cast<int>(s), ranges[s], generation, workers, state));
  }
  return absl::OkStatus();
}

namespace {

// One shard's state: its step and its range's parameters followed by its optimiser state.
struct ShardStateRange {
  uint64_t step = 0;
  std::vector<float> sequence;
};

// `state_elements`: the range's parameters and optimiser state, as the shard must send them.
absl::StatusOr<ShardStateRange> FetchShard(const ShardTransferOptions& options, int shard,
                                           const ElementRange& range, uint64_t state_elements,
                                           std::optional<uint64_t> step) {
  auto stub = proto::ParameterShard::NewStub(MakeChannel(options.shards[shard]));
  grpc::ClientContext context;
  SetDeadline(context, options.timeout);
  proto::PsRangeRequest request;
  if (step.has_value()) request.set_step(*step);
  auto reader = stub->GetState(&context, request);
  ShardStateRange fetched;
  proto::PsStateSegment segment;
  while (reader->Read(&segment)) {
    if (segment.range_begin() != range.begin || segment.range_elements() != range.size() ||
        segment.offset() != fetched.sequence.size() ||
        segment.payload().size() % sizeof(float) != 0 ||
        segment.state_elements() != state_elements ||
        segment.payload().size() / sizeof(float) > state_elements - fetched.sequence.size()) {
      context.TryCancel();
      reader->Finish();
      return absl::FailedPreconditionError(absl::StrCat(
          PsShardName(shard), " sent state for [", segment.range_begin(), ", ",
          segment.range_begin() + segment.range_elements(), ") at offset ", segment.offset(),
          " of ", segment.state_elements(), "; the shard map says [", range.begin, ", ", range.end,
          ") with ", state_elements, " elements of state"));
    }
    fetched.step = segment.step();
    const auto* values = reinterpret_cast<const float*>(segment.payload().data());
    fetched.sequence.insert(fetched.sequence.end(), values,
                            values + segment.payload().size() / sizeof(float));
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return ShardError(status, shard, "fetching the state of");
  if (fetched.sequence.size() != state_elements) {
    return absl::FailedPreconditionError(
        absl::StrCat(PsShardName(shard), " sent ", fetched.sequence.size(), " of its ",
                     state_elements, " elements of parameters and optimiser state"));
  }
  return fetched;
}

}  // namespace

absl::StatusOr<JobState> FetchShardState(const ShardTransferOptions& options, size_t parameters,
                                         size_t optimizer_state_size) {
  const std::vector<ElementRange> ranges =
      EvenRanges(parameters, static_cast<int>(options.shards.size()));
  // Every moment vector of the optimiser (OptimizerStateRange's layout) has one value per element.
  const uint64_t moments = parameters == 0 ? 0 : (optimizer_state_size - 1) / parameters;
  auto state_elements = [&](const ElementRange& range) {
    return range.size() + 1 + moments * range.size();
  };
  std::vector<ShardStateRange> fetched;
  uint64_t lowest = std::numeric_limits<uint64_t>::max();
  for (size_t s = 0; s < options.shards.size(); ++s) {
    ASSIGN_OR_RETURN(ShardStateRange shard, FetchShard(options, static_cast<int>(s), ranges[s],
                                                       state_elements(ranges[s]), std::nullopt));
    lowest = std::min(lowest, shard.step);
    fetched.push_back(std::move(shard));
  }
  // A step interrupted between shards (a worker lost mid-push, a mode switch cancelling the
  // pushes) is applied on some shards only: roll those back to the last step all of them hold.
  for (size_t s = 0; s < fetched.size(); ++s) {
    if (fetched[s].step == lowest) continue;
    if (fetched[s].step != lowest + 1) {
      return absl::FailedPreconditionError(
          absl::StrCat(PsShardName(static_cast<int>(s)), " is at step ", fetched[s].step,
                       " but another shard at ", lowest,
                       "; shards can differ by one step only, so no consistent state exists"));
    }
    ASSIGN_OR_RETURN(fetched[s], FetchShard(options, static_cast<int>(s), ranges[s],
                                            state_elements(ranges[s]), lowest));
  }
  JobState state;
  state.step = lowest;
  state.parameters.resize(parameters);
  state.optimizer_state.resize(optimizer_state_size);
  for (size_t s = 0; s < fetched.size(); ++s) {
    const ElementRange& range = ranges[s];
    const std::vector<float>& sequence = fetched[s].sequence;
    std::copy(sequence.begin(), sequence.begin() + range.size(),
              state.parameters.begin() + range.begin);
    RETURN_IF_ERROR(Annotate(
        SetOptimizerStateRange(absl::MakeSpan(state.optimizer_state), parameters, range.begin,
                               range.end, absl::MakeConstSpan(sequence).subspan(range.size())),
        PsShardName(static_cast<int>(s))));
  }
  return state;
}

}  // namespace ringside::worker
