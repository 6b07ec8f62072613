// The receiving end of a ring link under arbitrary input: bytes decoded as a RingSegment message
// the way the gRPC receiver does (ring/segment_codec.h, the message split across slices as gRPC
// delivers it), and a RingInbox (ring/inbox.h) of a small ring fed with those segments and with
// a simulated left neighbour's well-formed ones (so that the fuzzer reaches deep into the
// schedule), interleaved with the local side's calls (Next, BeginCollective, SetTopology, ...).
//
// Checks, besides the sanitizers:
//  - the codec decodes what protobuf parses, to the same fields and payload, and a decoded
//    segment encodes and decodes back to itself;
//  - every segment the inbox hands out is of the current generation, from the left neighbour,
//    of the collective asked for, of a known element type (the honest neighbour sends float32,
//    float16 and bfloat16 collectives in turn), fits its chunk, and continues it exactly where
//    the previous one ended (nothing out of sequence is ever accepted);
//  - what waits in the inbox stays within max_queued_bytes (queued) and max_held_bytes (held).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/ring.pb.h"
#include "ring/inbox.h"
#include "ring/schedule.h"
#include "ring/segment_codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

using ring::RingInbox;
using ring::RingSchedule;
using ring::RingTopology;
using ring::Segment;
using ring::SegmentHeader;

// `bytes` as gRPC hands a message over: slices cut at two positions.
grpc::ByteBuffer Sliced(const std::string& bytes, size_t cut_a, size_t cut_b) {
  cut_a %= bytes.size() + 1;
  cut_b %= bytes.size() + 1;
  if (cut_a > cut_b) std::swap(cut_a, cut_b);
  std::vector<grpc::Slice> slices;
  slices.emplace_back(bytes.data(), cut_a);
  slices.emplace_back(bytes.data() + cut_a, cut_b - cut_a);
  slices.emplace_back(bytes.data() + cut_b, bytes.size() - cut_b);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

bool SameHeader(const SegmentHeader& a, const SegmentHeader& b) {
  return a.generation == b.generation && a.collective == b.collective &&
         a.sender_rank == b.sender_rank && a.step == b.step && a.chunk == b.chunk &&
         a.offset == b.offset && a.total_elements == b.total_elements && a.dtype == b.dtype &&
         a.control == b.control;
}

// Decodes `bytes` as the receiver does and checks the result against protobuf's own parser and
// against a second encoding of what was decoded.
absl::StatusOr<Segment> DecodeChecked(const std::string& bytes, size_t cut_a, size_t cut_b) {
  grpc::ByteBuffer message = Sliced(bytes, cut_a, cut_b);
  absl::StatusOr<Segment> segment = ring::DecodeSegment(message);
  if (!segment.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(segment.status()), "%s",
               segment.status().ToString().c_str());
    return segment;
  }
  const SegmentHeader& h = segment->header;
  const std::string payload = segment->payload.ToString();
  FUZZ_CHECK(payload.size() <= bytes.size(), "payload of %zu bytes from a message of %zu",
             payload.size(), bytes.size());

  proto::RingSegment parsed;
  FUZZ_CHECK(parsed.ParseFromString(bytes), "decoded a message protobuf refuses (%zu bytes)",
             bytes.size());
  FUZZ_CHECK(parsed.generation() == h.generation && parsed.collective() == h.collective &&
                 static_cast<int>(parsed.sender_rank()) == h.sender_rank &&
                 static_cast<int>(parsed.step()) == h.step &&
                 static_cast<int>(parsed.chunk()) == h.chunk && parsed.offset() == h.offset &&
                 parsed.total_elements() == h.total_elements &&
                 parsed.dtype() == static_cast<uint32_t>(h.dtype) && parsed.control() == h.control,
             "decoded header differs from protobuf's parse");
  FUZZ_CHECK(parsed.payload() == payload, "decoded payload differs from protobuf's parse");

  grpc::ByteBuffer again = ring::EncodeSegment(h, payload);
  absl::StatusOr<Segment> round_trip = ring::DecodeSegment(again);
  FUZZ_CHECK(round_trip.ok(), "re-encoded segment does not decode: %s",
             round_trip.status().ToString().c_str());
  FUZZ_CHECK(SameHeader(round_trip->header, h) && round_trip->payload.ToString() == payload,
             "re-encoded segment decodes differently");
  return segment;
}

// The left neighbour as a well-behaved sender: the next segment of its schedule each time.
struct Sender {
  uint64_t generation = 1;
  uint64_t collective = 1;
  int step = 0;
  uint64_t offset = 0;
  uint64_t total_elements = 0;
  // The wire dtype of the collective (--wire_dtype): float32, float16 or bfloat16 in turn, so
  // 16-bit segments go through the inbox as well.
  uint32_t dtype = WireDtypeNumber(WireDtype::kFp32);

  // The next segment of at most `max_elements` elements, for a receiver in `topology`.
  Segment Next(const RingTopology& topology, uint64_t max_elements, bool advance) {
    const int left = topology.left();
    const int chunk = RingSchedule(topology.world, left).Step(step).send_chunk;
    const uint64_t chunk_size = ring::ChunkRanges(total_elements, topology.world)[chunk].size();
    const uint64_t elements = std::min(max_elements, chunk_size - offset);
    Segment segment;
    segment.header = SegmentHeader{generation, collective,     left,  step, chunk,
                                   offset,     total_elements, dtype, false};
    segment.payload =
        ring::SegmentPayload(std::string(elements * ElementSizeOfNumber(dtype), '\x3f'));
    if (advance) {
      offset += elements;
      if (offset >= chunk_size) {
        offset = 0;
        if (++step == 2 * (topology.world - 1)) Restart(collective + 1);
      }
    }
    return segment;
  }
  void Restart(uint64_t next_collective) {
    collective = next_collective;
    constexpr WireDtype kDtypes[] = {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16};
    dtype = WireDtypeNumber(kDtypes[next_collective % 3]);
    step = 0;
    offset = 0;
  }
};

// One header field, or the payload's length, set to `value`.
void Mutate(Segment& segment, uint8_t field, uint64_t value) {
  SegmentHeader& h = segment.header;
  const auto as_int = [value] { return static_cast<int>(static_cast<uint32_t>(value)); };
  switch (field) {
    case 0:
      h.generation = value;
      break;
    case 1:
      h.collective = value;
      break;
    case 2:
      h.sender_rank = as_int();
      break;
    case 3:
      h.step = as_int();
      break;
    case 4:
      h.chunk = as_int();
      break;
    case 5:
      h.offset = value;
      break;
    case 6:
      h.total_elements = value;
      break;
    case 7:
      h.dtype = static_cast<uint32_t>(value);
      break;
    case 8:
      h.control = value % 2 == 1;
      break;
    default:
      segment.payload = ring::SegmentPayload(std::string(value % 64, '\x3f'));
      break;
  }
}

// Where each collective handed out in this generation has got to.
struct Delivered {
  struct Position {
    int step = 0;
    uint64_t offset = 0;
    uint64_t total_elements = 0;
  };
  std::map<uint64_t, Position> collectives;
  uint64_t last_collective = 0;
};

void CheckDelivered(const Segment& segment, uint64_t collective, const RingTopology& topology,
                    Delivered& delivered) {
  const SegmentHeader& h = segment.header;
  FUZZ_CHECK(h.collective == collective, "asked for collective %lu, got %lu", collective,
             h.collective);
  FUZZ_CHECK(h.generation == topology.generation, "segment of generation %lu in generation %lu",
             h.generation, topology.generation);
  FUZZ_CHECK(h.sender_rank == topology.left(), "segment from rank %d; left neighbour is %d",
             h.sender_rank, topology.left());
  const size_t element_size = ElementSizeOfNumber(h.dtype);
  FUZZ_CHECK(element_size != 0, "dtype %u", static_cast<unsigned>(h.dtype));
  const RingSchedule schedule(topology.world, topology.left());
  FUZZ_CHECK(h.step >= 0 && h.step < schedule.steps(), "step %d of %d", h.step, schedule.steps());
  FUZZ_CHECK(h.chunk == schedule.Step(h.step).send_chunk, "chunk %d at step %d", h.chunk, h.step);
  const uint64_t chunk_size = ring::ChunkRanges(h.total_elements, topology.world)[h.chunk].size();
  FUZZ_CHECK(segment.payload.size() % element_size == 0, "ragged payload of %zu bytes",
             segment.payload.size());
  const uint64_t elements = segment.payload.size() / element_size;
  FUZZ_CHECK(h.offset <= chunk_size && elements <= chunk_size - h.offset,
             "%lu elements at %lu in a chunk of %lu", elements, h.offset, chunk_size);

  FUZZ_CHECK(h.collective >= delivered.last_collective, "collective %lu after %lu", h.collective,
             delivered.last_collective);
  delivered.last_collective = h.collective;
  auto [it, first] = delivered.collectives.try_emplace(h.collective);
  Delivered::Position& position = it->second;
  if (first) {
    FUZZ_CHECK(h.step == 0 && h.offset == 0, "collective %lu begins at step %d offset %lu",
               h.collective, h.step, h.offset);
    position.total_elements = h.total_elements;
  } else {
    FUZZ_CHECK(h.step == position.step && h.offset == position.offset &&
                   h.total_elements == position.total_elements,
               "collective %lu: step %d offset %lu of %lu follows step %d offset %lu of %lu",
               h.collective, h.step, h.offset, h.total_elements, position.step, position.offset,
               position.total_elements);
  }
  position.offset = h.offset + elements;
  if (position.offset >= chunk_size) {
    position.offset = 0;
    ++position.step;
  }
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace op = ring_ops;
  FuzzReader in(data, size);
  ring::RingTopology topology;
  topology.generation = 1;
  topology.world = 2 + in.Byte() % 3;
  topology.rank = in.Byte() % topology.world;
  Sender sender;
  sender.total_elements = in.Byte() % 24;
  ring::RingInboxOptions options;
  options.max_queued_bytes = 64 * (1 + in.Byte() % 32);
  options.max_held_bytes = options.max_queued_bytes;  // a cap of its own, here the same size
  ring::RingInbox inbox(topology, options, LinkReceiveMetrics{});
  uint64_t stream = inbox.OpenStream();
  uint64_t collective = 1;  // the local allreduce's, as the sender's
  Delivered delivered;
  // What the segments of a newer generation that the inbox took cost (payload and
  // bookkeeping): they are held until SetTopology, so certainly all still there.
  uint64_t held_cost = 0;

  auto accept = [&](ring::Segment segment) {
    const bool newer = segment.header.generation > topology.generation;
    const uint64_t cost = segment.payload.size() + ring::kQueuedSegmentOverheadBytes;
    const absl::Status status = inbox.Accept(std::move(segment), stream);
    FUZZ_CHECK(status.ok() || absl::IsInvalidArgument(status) ||
                   absl::IsFailedPrecondition(status) || absl::IsResourceExhausted(status),
               "%s", status.ToString().c_str());
    if (status.ok() && newer) held_cost += cost;
  };

  while (!in.empty()) {
    const uint8_t op_code = in.Byte() % op::kCount;
    switch (op_code) {
      case op::kRawMessage: {
        const std::string bytes = in.Bytes(in.Uint(2) % 1024);
        const size_t cut_a = in.Byte(), cut_b = in.Byte();
        absl::StatusOr<ring::Segment> segment = DecodeChecked(bytes, cut_a, cut_b);
        if (segment.ok()) accept(*std::move(segment));
        break;
      }
      case op::kNextSegment:
      case op::kMutatedSegment: {
        const bool mutate = op_code == op::kMutatedSegment;
        const uint64_t elements = 1 + in.Byte() % 8;
        ring::Segment next = sender.Next(topology, elements, /*advance=*/!mutate);
        if (mutate) Mutate(next, in.Byte() % 10, in.Uint(8));
        const std::string payload = next.payload.ToString();
        grpc::ByteBuffer encoded = ring::EncodeSegment(next.header, payload);
        std::vector<grpc::Slice> slices;
        FUZZ_CHECK(encoded.Dump(&slices).ok(), "unreadable encoding");
        std::string bytes;
        for (const grpc::Slice& slice : slices) {
          bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
        }
        absl::StatusOr<ring::Segment> segment = DecodeChecked(bytes, in.Byte(), bytes.size());
        FUZZ_CHECK(segment.ok() && SameHeader(segment->header, next.header) &&
                       segment->payload.ToString() == payload,
                   "an encoded segment does not decode to itself");
        accept(*std::move(segment));
        break;
      }
      case op::kNext: {
        // Never waits: the deadline has passed, so it returns what is queued or an error.
        absl::StatusOr<ring::Segment> segment = inbox.Next(collective, absl::InfinitePast());
        if (segment.ok()) CheckDelivered(*segment, collective, topology, delivered);
        break;
      }
      case op::kBeginCollective:
        collective += in.Byte() % 3;
        inbox.BeginCollective(collective);
        break;
      case op::kSetTopology:
        topology.generation += 1 + in.Byte() % 2;
        topology.world = 2 + in.Byte() % 3;
        topology.rank = in.Byte() % topology.world;
        inbox.SetTopology(topology, LinkReceiveMetrics{});
        delivered = Delivered{};
        held_cost = 0;                          // released: validated into the queue, or dropped
        sender.Restart(sender.collective + 1);  // its chunks changed with the world
        break;
      case op::kSenderGeneration:
        sender.generation = topology.generation - 1 + in.Byte() % 4;
        sender.Restart(sender.collective + 1);
        break;
      case op::kSenderSkip:
        sender.Restart(sender.collective + in.Byte() % 3);
        break;
      case op::kSupersede:
        inbox.Supersede(topology.generation + in.Byte() % 2);
        break;
      case op::kStream:
        if (in.Byte() % 2 == 1) {
          stream = inbox.OpenStream();
        } else {
          inbox.StreamEnded(stream);
        }
        break;
      case op::kFail:
        inbox.Fail(absl::InternalError("the local side failed"));
        break;
    }
    FUZZ_CHECK(inbox.queued_bytes() <= options.max_queued_bytes, "%lu bytes queued, limit %lu",
               inbox.queued_bytes(), options.max_queued_bytes);
    FUZZ_CHECK(held_cost <= options.max_held_bytes, "held segments cost %lu, limit %lu", held_cost,
               options.max_held_bytes);
  }
  return 0;
}
