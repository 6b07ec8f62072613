#include "worker/shard_transfer.h"

#include <algorithm>
#include <memory>

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
  const std::vector<float> optimizer = OptimizerStateRange(
      state.optimizer_state, state.parameters.size(), range.begin, range.end);
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

absl::StatusOr<JobState> FetchShardState(const ShardTransferOptions& options, size_t parameters,
                                         size_t optimizer_state_size) {
  const std::vector<ElementRange> ranges =
      EvenRanges(parameters, static_cast<int>(options.shards.size()));
  JobState state;
  state.parameters.resize(parameters);
  state.optimizer_state.resize(optimizer_state_size);
  for (size_t s = 0; s < options.shards.size(); ++s) {
    const int shard = static_cast<int>(s);
    auto stub = proto::ParameterShard::NewStub(MakeChannel(options.shards[s]));
    grpc::ClientContext context;
    SetDeadline(context, options.timeout);
    auto reader = stub->GetState(&context, proto::PsRangeRequest());
    std::vector<float> sequence;
    proto::PsStateSegment segment;
    uint64_t step = 0;
    while (reader->Read(&segment)) {
      const ElementRange& range = ranges[s];
      if (segment.range_begin() != range.begin || segment.range_elements() != range.size() ||
          segment.offset() != sequence.size() || segment.payload().size() % sizeof(float) != 0) {
        context.TryCancel();
        reader->Finish();
        return absl::FailedPreconditionError(absl::StrCat(
            PsShardName(shard), " sent state for [", segment.range_begin(), ", ",
            segment.range_begin() + segment.range_elements(), ") at offset ", segment.offset(),
            "; the shard map says [", range.begin, ", ", range.end, ")"));
      }
      step = segment.step();
      const auto* values = reinterpret_cast<const float*>(segment.payload().data());
      sequence.insert(sequence.end(), values, values + segment.payload().size() / sizeof(float));
    }
    const grpc::Status status = reader->Finish();
    if (!status.ok()) return ShardError(status, shard, "fetching the state of");
    if (s > 0 && step != state.step) {
      return absl::FailedPreconditionError(
          absl::StrCat(PsShardName(shard), " is at step ", step, " but ps-0 at ", state.step,
                       "; the shards disagree, so no consistent state exists"));
    }
    state.step = step;
    const ElementRange& range = ranges[s];
    if (sequence.size() < range.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat(PsShardName(shard), " sent ", sequence.size(), " elements, fewer than its ",
                       range.size(), " parameters"));
    }
    std::copy(sequence.begin(), sequence.begin() + range.size(),
              state.parameters.begin() + range.begin);
    RETURN_IF_ERROR(Annotate(
        SetOptimizerStateRange(absl::MakeSpan(state.optimizer_state), parameters, range.begin,
                               range.end,
                               absl::MakeConstSpan(sequence).subspan(range.size())),
        PsShardName(shard)));
  }
  return state;
}

}  // namespace ringside::worker
