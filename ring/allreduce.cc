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
  counting_ = options.control ? LinkSendMetrics{} : metrics_;
  if (counting_.expected_bytes != nullptr) {
    counting_.expected_bytes->Increment(static_cast<double>(
        RingElementsSentByRank(buffer.size(), topology.world, topology.rank) * kElementBytes));
  }
  absl::Status status = RunSteps(collective, buffer, options, deadline);
  if (!status.ok()) {
    transport_.AbandonCollective(status);
    return Annotate(status,
                    absl::StrCat("ring allreduce ", collective, " on ", WorkerName(topology.rank)));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::RunSteps(uint64_t collective, absl::Span<float> buffer,
                                     const AllreduceOptions& options, absl::Time deadline) {
  const RingTopology& topology = transport_.topology();
  const RingSchedule schedule(topology.world, topology.rank);
  const auto chunks = ChunkRanges(buffer.size(), topology.world);
  const uint64_t segment_elements = std::max<uint64_t>(1, options.segment_bytes / kElementBytes);
  auto header_of = [&](int step) {
    SegmentHeader header;
    header.generation = topology.generation;
    header.collective = collective;
    header.sender_rank = topology.rank;
    header.step = step;
    header.chunk = schedule.Step(step).send_chunk;
    header.total_elements = buffer.size();
    header.dtype = DType::kFloat32;
    header.control = options.control;
    return header;
  };
  // Step 0 sends this rank's own data; every later step sends the chunk the step before
  // received, so each received segment is forwarded as soon as it is final (segment-level
  // pipelining: the ring never waits for a whole chunk, and the segment is still in cache).
  const SegmentHeader first = header_of(0);
  uint64_t offset = 0;
  const absl::Span<float> first_chunk = ChunkOf(buffer, chunks[first.chunk]);
  do {
    const uint64_t count = std::min<uint64_t>(segment_elements, first_chunk.size() - offset);
    RETURN_IF_ERROR(SendSegment(first, offset, first_chunk.subspan(offset, count)));
    offset += count;
  } while (offset < first_chunk.size());

  for (int step = 0; step < schedule.steps(); ++step) {
    const RingStep plan = schedule.Step(step);
    ChunkReceipt receipt;
    receipt.step = step;
    receipt.chunk = plan.receive_chunk;
    receipt.reduce = plan.reduce;
    // Scale the one chunk this rank owns before allgather: every rank then copies the same
    // scaled values, so all ranks end bit-identical.
    receipt.scale = step == topology.world - 2 && options.op == ReduceOp::kAverage;
    if (step + 1 < schedule.steps()) {
      receipt.forward = header_of(step + 1);
      if (receipt.forward->chunk != plan.receive_chunk) {
        return absl::InternalError("ring schedule does not forward the chunk it received");
      }
    }
    RETURN_IF_ERROR(ReceiveChunk(collective, receipt, buffer.size(),
                                 ChunkOf(buffer, chunks[plan.receive_chunk]), deadline));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::SendSegment(const SegmentHeader& header, uint64_t offset,
                                        absl::Span<const float> values) {
  SegmentHeader segment_header = header;
  segment_header.offset = offset;
  const char* bytes = reinterpret_cast<const char*>(values.data());
  RETURN_IF_ERROR(
      transport_.Send(segment_header, absl::MakeConstSpan(bytes, values.size() * kElementBytes)));
  if (counting_.bytes != nullptr) counting_.bytes->Increment(values.size() * kElementBytes);
  if (counting_.messages != nullptr) counting_.messages->Increment();
  return absl::OkStatus();
}

absl::Status RingAllreduce::ReceiveChunk(uint64_t collective, const ChunkReceipt& receipt,
                                         uint64_t total_elements, absl::Span<float> chunk,
                                         absl::Time deadline) {
  const int world = transport_.topology().world;
  uint64_t offset = 0;
  do {
    ASSIGN_OR_RETURN(Segment segment, transport_.Receive(collective, deadline));
    const SegmentHeader& h = segment.header;
    if (h.total_elements != total_elements || h.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat("the left neighbour reduces ",
                                                     h.total_elements, " ", DTypeName(h.dtype),
                                                     " elements but this worker ", total_elements,
                                                     " float32: every rank must pass the "
                                                     "same buffer length and type"));
    }
    const uint64_t count = segment.payload.size() / kElementBytes;
    if (h.step != receipt.step || h.chunk != receipt.chunk || h.offset != offset ||
        count > chunk.size() - offset) {
      return absl::InternalError(absl::StrCat(
          "inbox delivered step ", h.step, " chunk ", h.chunk, " offset ", h.offset,
          " while expecting step ", receipt.step, " chunk ", receipt.chunk, " offset ", offset));
    }
    float* dst = chunk.data() + offset;
    ApplyFloat32Pieces(dst, segment.payload.pieces(), /*add=*/receipt.reduce);
    if (receipt.scale) ScaleFloat32(dst, count, 1.0f / static_cast<float>(world));
    if (receipt.forward.has_value()) {
      RETURN_IF_ERROR(SendSegment(*receipt.forward, offset, absl::MakeConstSpan(dst, count)));
    }
    offset += count;
  } while (offset < chunk.size());
  return absl::OkStatus();
}

}  // namespace ringside::ring
