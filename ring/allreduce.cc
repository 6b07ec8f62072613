#include "ring/allreduce.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/cost_model.h"
#include "common/status_macros.h"
#include "ring/reduce.h"

namespace ringside::ring {
namespace {

constexpr uint64_t kElementBytes = sizeof(float);

absl::Span<float> ChunkOf(absl::Span<float> buffer, const ElementRange& range) {
  return buffer.subspan(range.begin, range.size());
}

}  // namespace

absl::Status RingAllreduce::Run(uint64_t collective, absl::Span<float> buffer,
                                const AllreduceOptions& options) {
  const RingTopology& topology = transport_.topology();
  RETURN_IF_ERROR(ValidateTopology(topology));
  if (topology.world == 1) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + options.timeout;
  transport_.BeginCollective(collective);
  if (metrics_.expected_bytes != nullptr) {
    metrics_.expected_bytes->Increment(static_cast<double>(
        RingElementsSentByRank(buffer.size(), topology.world, topology.rank) * kElementBytes));
  }
  absl::Status status = RunSteps(collective, buffer, options, deadline);
  if (!status.ok()) {
    transport_.AbandonCollective(status);
    return Annotate(status, absl::StrCat("ring allreduce ", collective, " on ",
                                         WorkerName(topology.rank)));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::RunSteps(uint64_t collective, absl::Span<float> buffer,
                                     const AllreduceOptions& options, absl::Time deadline) {
  const RingTopology& topology = transport_.topology();
  const RingSchedule schedule(topology.world, topology.rank);
  const auto chunks = ChunkRanges(buffer.size(), topology.world);
  const uint64_t segment_elements = std::max<uint64_t>(1, options.segment_bytes / kElementBytes);
  for (int step = 0; step < schedule.steps(); ++step) {
    const RingStep plan = schedule.Step(step);
    SegmentHeader header;
    header.generation = topology.generation;
    header.collective = collective;
    header.sender_rank = topology.rank;
    header.step = step;
    header.chunk = plan.send_chunk;
    header.total_elements = buffer.size();
    header.dtype = DType::kFloat32;
    RETURN_IF_ERROR(SendChunk(header, ChunkOf(buffer, chunks[plan.send_chunk]), segment_elements));
    RETURN_IF_ERROR(ReceiveChunk(collective, step, plan.receive_chunk, plan.reduce, buffer.size(),
                                 ChunkOf(buffer, chunks[plan.receive_chunk]), deadline));
    if (step == topology.world - 2 && options.op == ReduceOp::kAverage) {
      // Scale the one chunk this rank owns before allgather: every rank then copies the same
      // scaled values, so all ranks end bit-identical.
      absl::Span<float> owned = ChunkOf(buffer, chunks[schedule.owned_chunk()]);
      ScaleFloat32(owned.data(), owned.size(), 1.0f / static_cast<float>(topology.world));
    }
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::SendChunk(const SegmentHeader& header, absl::Span<const float> chunk,
                                      uint64_t segment_elements) {
  SegmentHeader segment_header = header;
  uint64_t offset = 0;
  do {
    const uint64_t count = std::min<uint64_t>(segment_elements, chunk.size() - offset);
    segment_header.offset = offset;
    const char* bytes = reinterpret_cast<const char*>(chunk.data() + offset);
    RETURN_IF_ERROR(transport_.Send(segment_header, absl::MakeConstSpan(bytes, count * kElementBytes)));
    if (metrics_.bytes != nullptr) metrics_.bytes->Increment(count * kElementBytes);
    if (metrics_.messages != nullptr) metrics_.messages->Increment();
    offset += count;
  } while (offset < chunk.size());
  return absl::OkStatus();
}

absl::Status RingAllreduce::ReceiveChunk(uint64_t collective, int step, int chunk_index,
                                         bool reduce, uint64_t total_elements,
                                         absl::Span<float> chunk, absl::Time deadline) {
  uint64_t offset = 0;
  do {
    ASSIGN_OR_RETURN(Segment segment, transport_.Receive(collective, deadline));
    const SegmentHeader& h = segment.header;
    if (h.total_elements != total_elements || h.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the left neighbour reduces ", h.total_elements, " ", DTypeName(h.dtype),
          " elements but this worker ", total_elements, " float32: every rank must pass the "
          "same buffer length and type"));
    }
    const uint64_t count = segment.payload.size() / kElementBytes;
    if (h.step != step || h.chunk != chunk_index || h.offset != offset ||
        count > chunk.size() - offset) {
      return absl::InternalError(absl::StrCat("inbox delivered step ", h.step, " chunk ", h.chunk,
                                              " offset ", h.offset, " while expecting step ", step,
                                              " chunk ", chunk_index, " offset ", offset));
    }
    float* dst = chunk.data() + offset;
    if (reduce) {
      AddFloat32(dst, segment.payload.data(), count);
    } else {
      std::memcpy(dst, segment.payload.data(), count * kElementBytes);
    }
    offset += count;
  } while (offset < chunk.size());
  return absl::OkStatus();
}

}  // namespace ringside::ring
