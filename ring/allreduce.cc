#include "ring/allreduce.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/cost_model.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "ring/reduce.h"

namespace ringside::ring {
namespace {

// The fewest segments a chunk travels in (RunSteps), unless that would make them smaller than
// kSmallestSegmentBytes: small collectives are latency-bound, and more messages only cost them.
constexpr uint64_t kSegmentsPerChunk = 4;
constexpr uint64_t kSmallestSegmentBytes = uint64_t{64} << 10;
// Elements a scatter-reduce hop sums and encodes at a time (ApplySegment): 8 KiB of float32,
// so a block is still in L1 when it is encoded into the message.
constexpr size_t kForwardBlockElements = 2048;
// A piece's collective on the wire is the caller's shifted by this many bits, plus the piece's
// index; so a caller's numbers must stay below kLastCollective.
constexpr int kPieceBits = 12;
constexpr uint64_t kLastCollective = (uint64_t{1} << (64 - kPieceBits)) - 1;
static_assert(kRingPieceElements << kPieceBits >= uint64_t{1} << 32,
              "a buffer of up to 2^32 elements fits in 2^kPieceBits pieces");

absl::Span<float> ChunkOf(absl::Span<float> buffer, const ElementRange& range) {
  return buffer.subspan(range.begin, range.size());
}

}  // namespace

uint64_t RingWireCollective(uint64_t collective, uint64_t piece) {
  return (collective << kPieceBits) | piece;
}

absl::Status RingAllreduce::Run(uint64_t collective, absl::Span<float> buffer,
                                const AllreduceOptions& options) {
  const RingTopology& topology = transport_.topology();
  RETURN_IF_ERROR(ValidateTopology(topology));
  if (topology.world == 1) return absl::OkStatus();
  if (collective > kLastCollective) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collective ", collective, " is past the last one a ring numbers (", kLastCollective, ")"));
  }
  const absl::Time deadline = absl::Now() + options.timeout;
  transport_.BeginCollective(RingWireCollective(collective));
  counting_ = options.control ? LinkSendMetrics{} : metrics_;
  const WireDtype wire = options.wire_dtype;
  if (counting_.expected_bytes != nullptr) {
    counting_.expected_bytes->Increment(static_cast<double>(
        RingBytesSentByRank(buffer.size(), topology.world, topology.rank, wire)));
  }
  // fp16's guard against overflow: every rank divides its share by N and multiplies the result
  // back, the same arithmetic on the same bits everywhere (fp32 and bf16: nothing at all).
  const float divisor = WireShareDivisor(wire, topology.world);
  const size_t own_non_finite = wire == WireDtype::kFp32 ? 0 : CountNonFinite(buffer);
  DivideShare(buffer, divisor);
  absl::Status status = RunPieces(collective, buffer, options, deadline);
  if (status.ok() && wire != WireDtype::kFp32) {
    // kAverage over divided shares is the average already.
    MultiplySum(buffer, options.op == ReduceOp::kSum ? divisor : 1.0f);
    status = CheckFinite(collective, buffer, own_non_finite);
  }
  if (!status.ok()) {
    transport_.AbandonCollective(status);
    return Annotate(status,
                    absl::StrCat("ring allreduce ", collective, " on ", WorkerName(topology.rank)));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::RunPieces(uint64_t collective, absl::Span<float> buffer,
                                      const AllreduceOptions& options, absl::Time deadline) {
  const std::vector<ElementRange> ranges = RingPieces(buffer.size());
  std::vector<Piece> pieces;
  for (size_t p = 0; p < ranges.size(); ++p) {
    // Each piece is a collective of its own on the wire, numbered after the caller's, in order.
    pieces.push_back(PlanPiece(RingWireCollective(collective, p),
                               buffer.subspan(ranges[p].begin, ranges[p].size()), options,
                               buffer.size()));
  }
  RETURN_IF_ERROR(SendFirstChunk(pieces[0], options));
  for (size_t p = 0; p < pieces.size(); ++p) {
    if (p > 0) transport_.BeginCollective(pieces[p].collective);
    // The next piece's first chunk follows this one's last forward on the link, so the pipeline
    // does not drain between pieces while this rank receives the last step.
    auto send_next = [&]() -> absl::Status {
      return p + 1 < pieces.size() ? SendFirstChunk(pieces[p + 1], options) : absl::OkStatus();
    };
    RETURN_IF_ERROR(Annotate(
        ReceiveSteps(pieces[p], options, deadline, send_next),
        pieces.size() == 1 ? std::string() : absl::StrCat("piece ", p + 1, " of ", pieces.size())));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::CheckFinite(uint64_t collective, absl::Span<const float> result,
                                        size_t own_non_finite) const {
  const size_t non_finite = CountNonFinite(result);
  if (non_finite == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the sum of collective ", collective, " has ", non_finite, " of ", result.size(),
                   " values NaN or infinite (this worker's own share had ", own_non_finite,
                   "): a NaN gradient, or a sum beyond the wire dtype's range; it is not used"));
}

RingAllreduce::Piece RingAllreduce::PlanPiece(uint64_t collective, absl::Span<float> buffer,
                                              const AllreduceOptions& options,
                                              uint64_t whole_elements) const {
  const int world = transport_.topology().world;
  Piece piece;
  piece.collective = collective;
  piece.buffer = buffer;
  piece.chunks = ChunkRanges(buffer.size(), world);
  // At most segment_bytes, and at least kSegmentsPerChunk segments to a chunk of the whole
  // buffer (of no less than kSmallestSegmentBytes): a rank forwards a segment as soon as it has
  // it, so a step's pipeline fills in one segment's time on the link, which must stay a small
  // part of a chunk's whatever the link's rate (1 MiB segments of a 1.8 MB chunk were 9% of the
  // bound at 100mbit, 16-bit chunks 27%). Sized by the whole buffer, not the piece: a piece's
  // next follows it on the link without a gap, and smaller segments of 8 MiB pieces cost 15-25%
  // of loopback throughput at 16 and 64 MiB.
  const uint64_t width = WireBytesPerElement(options.wire_dtype);
  const uint64_t largest_chunk = (whole_elements + world - 1) / world;
  const uint64_t quarter = std::max((largest_chunk + kSegmentsPerChunk - 1) / kSegmentsPerChunk,
                                    kSmallestSegmentBytes / width);
  piece.segment_elements =
      std::max<uint64_t>(1, std::min<uint64_t>(options.segment_bytes / width, quarter));
  return piece;
}

SegmentHeader RingAllreduce::HeaderOf(const Piece& piece, int step,
                                      const AllreduceOptions& options) const {
  const RingTopology& topology = transport_.topology();
  SegmentHeader header;
  header.generation = topology.generation;
  header.collective = piece.collective;
  header.sender_rank = topology.rank;
  header.step = step;
  header.chunk = RingSchedule(topology.world, topology.rank).Step(step).send_chunk;
  header.total_elements = piece.buffer.size();
  header.dtype = WireDtypeNumber(options.wire_dtype);
  header.control = options.control;
  return header;
}

absl::Status RingAllreduce::SendFirstChunk(const Piece& piece, const AllreduceOptions& options) {
  // Step 0 sends this rank's own data; every later step sends the chunk the step before
  // received, so each received segment is forwarded as soon as it is final (segment-level
  // pipelining: the ring never waits for a whole chunk, and the segment is still in cache).
  const SegmentHeader first = HeaderOf(piece, 0, options);
  uint64_t offset = 0;
  const absl::Span<float> first_chunk = ChunkOf(piece.buffer, piece.chunks[first.chunk]);
  do {
    const uint64_t count = std::min<uint64_t>(piece.segment_elements, first_chunk.size() - offset);
    RETURN_IF_ERROR(
        SendSegment(first, offset, first_chunk.subspan(offset, count), options.wire_dtype));
    offset += count;
  } while (offset < first_chunk.size());
  return absl::OkStatus();
}

absl::Status RingAllreduce::ReceiveSteps(const Piece& piece, const AllreduceOptions& options,
                                         absl::Time deadline,
                                         const std::function<absl::Status()>& before_last_step) {
  const RingTopology& topology = transport_.topology();
  const RingSchedule schedule(topology.world, topology.rank);
  const WireDtype wire = options.wire_dtype;
  for (int step = 0; step < schedule.steps(); ++step) {
    if (step + 1 == schedule.steps()) RETURN_IF_ERROR(before_last_step());
    const RingStep plan = schedule.Step(step);
    ChunkReceipt receipt;
    receipt.step = step;
    receipt.chunk = plan.receive_chunk;
    receipt.reduce = plan.reduce;
    receipt.wire = wire;
    const bool owned = step == topology.world - 2;  // the chunk this rank completes
    // Scale the one chunk this rank owns before allgather: every rank then copies the same
    // scaled values, so all ranks end bit-identical. (Shares divided for fp16 make the sum the
    // average already.)
    receipt.scale =
        owned && options.op == ReduceOp::kAverage && WireShareDivisor(wire, topology.world) == 1.0f;
    receipt.round = owned && wire != WireDtype::kFp32;
    receipt.keep = !plan.reduce || owned;
    if (step + 1 < schedule.steps()) {
      receipt.forward = HeaderOf(piece, step + 1, options);
      if (receipt.forward->chunk != plan.receive_chunk) {
        return absl::InternalError("ring schedule does not forward the chunk it received");
      }
    }
    RETURN_IF_ERROR(ReceiveChunk(piece.collective, receipt, piece.buffer.size(),
                                 ChunkOf(piece.buffer, piece.chunks[plan.receive_chunk]),
                                 deadline));
  }
  return absl::OkStatus();
}

absl::Status RingAllreduce::SendSegment(const SegmentHeader& header, uint64_t offset,
                                        absl::Span<const float> values, WireDtype dtype) {
  SegmentHeader segment_header = header;
  segment_header.offset = offset;
  const size_t bytes = values.size() * WireBytesPerElement(dtype);
  RETURN_IF_ERROR(transport_.SendFilled(segment_header, bytes,
                                        [&](char* out) { EncodeWire(dtype, values, out); }));
  CountSent(bytes);
  return absl::OkStatus();
}

void RingAllreduce::CountSent(size_t payload_bytes) {
  if (counting_.bytes != nullptr) counting_.bytes->Increment(static_cast<double>(payload_bytes));
  if (counting_.messages != nullptr) counting_.messages->Increment();
}

absl::Status RingAllreduce::ApplySegment(const ChunkReceipt& receipt, const Segment& segment,
                                         absl::Span<float> values) {
  WirePiecesReader reader(receipt.wire, segment.payload.pieces());
  if (!receipt.forward.has_value()) {
    // The payload holds values.size() elements (counted from its size): the read cannot fall
    // short.
    reader.Read(values, /*add=*/receipt.reduce);
    Finish(receipt, values);
    return absl::OkStatus();
  }
  SegmentHeader header = *receipt.forward;
  header.offset = segment.header.offset;
  if (!receipt.reduce) {
    // The allgather passes the final values on as they came: the same bytes, not a copy.
    reader.Read(values, /*add=*/false);
    RETURN_IF_ERROR(transport_.Forward(header, segment.payload));
    CountSent(segment.payload.size());
    return absl::OkStatus();
  }
  // A scatter-reduce hop sums straight into the message for the right neighbour. A partial sum
  // this rank does not keep (its chunk is overwritten by the allgather) never goes through the
  // buffer: one pass reads both addends and writes the message (only a completed sum is ever
  // scaled or rounded, so there is nothing to finish). The sum it completes goes to the buffer
  // too, a block at a time (still in L1 when encoded).
  const size_t width = WireBytesPerElement(receipt.wire);
  const size_t bytes = values.size() * width;
  RETURN_IF_ERROR(transport_.SendFilled(header, bytes, [&](char* out) {
    if (!receipt.keep) {
      reader.ReadSumEncoded(values, out);
      return;
    }
    for (size_t at = 0; at < values.size(); at += kForwardBlockElements) {
      const absl::Span<float> sum =
          values.subspan(at, std::min(kForwardBlockElements, values.size() - at));
      reader.Read(sum, /*add=*/true);
      Finish(receipt, sum);
      EncodeWire(receipt.wire, sum, out + at * width);
    }
  }));
  CountSent(bytes);
  return absl::OkStatus();
}

void RingAllreduce::Finish(const ChunkReceipt& receipt, absl::Span<float> values) const {
  if (receipt.scale) {
    ScaleFloat32(values.data(), values.size(),
                 1.0f / static_cast<float>(transport_.topology().world));
  }
  // The completed chunk's own copy is rounded to what its allgather sends (and every other
  // rank decodes), so all ranks end with the same bits.
  if (receipt.round) RoundToWire(receipt.wire, values);
}

absl::Status RingAllreduce::ReceiveChunk(uint64_t collective, const ChunkReceipt& receipt,
                                         uint64_t total_elements, absl::Span<float> chunk,
                                         absl::Time deadline) {
  const uint32_t dtype = WireDtypeNumber(receipt.wire);
  const size_t width = WireBytesPerElement(receipt.wire);
  uint64_t offset = 0;
  do {
    ASSIGN_OR_RETURN(Segment segment, transport_.Receive(collective, deadline));
    const SegmentHeader& h = segment.header;
    if (h.total_elements != total_elements || h.dtype != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the left neighbour reduces ", h.total_elements, " ", WireDtypeNumberName(h.dtype),
          " elements but this worker ", total_elements, " ", WireDtypeNumberName(dtype),
          ": every rank must pass the same buffer length and type (--wire_dtype)"));
    }
    const uint64_t count = segment.payload.size() / width;
    if (h.step != receipt.step || h.chunk != receipt.chunk || h.offset != offset ||
        count > chunk.size() - offset) {
      return absl::InternalError(absl::StrCat(
          "inbox delivered step ", h.step, " chunk ", h.chunk, " offset ", h.offset,
          " while expecting step ", receipt.step, " chunk ", receipt.chunk, " offset ", offset));
    }
    RETURN_IF_ERROR(ApplySegment(receipt, segment, chunk.subspan(offset, count)));
    offset += count;
  } while (offset < chunk.size());
  return absl::OkStatus();
}

}  // namespace ringside::ring
