#include "ring/segment_codec.h"

#include <cstring>
#include <utility>

#include "common/payload_codec.h"
#include "proto/ring.pb.h"

namespace ringside::ring {
namespace {

constexpr int kPayloadField = proto::RingSegment::kPayloadFieldNumber;

proto::RingSegment HeaderProto(const SegmentHeader& header) {
  proto::RingSegment message;
  message.set_generation(header.generation);
  message.set_collective(header.collective);
  message.set_sender_rank(static_cast<uint32_t>(header.sender_rank));
  message.set_step(static_cast<uint32_t>(header.step));
  message.set_chunk(static_cast<uint32_t>(header.chunk));
  message.set_offset(header.offset);
  message.set_total_elements(header.total_elements);
  message.set_dtype(header.dtype);
  message.set_control(header.control);
  return message;
}

// An absent field is zero, as protobuf parses it (proto3 never sends a zero): a dtype left out
// is kNoWireDtypeNumber, which the inbox refuses, not SegmentHeader's default of float32.
SegmentHeader FromProto(const proto::RingSegment& message) {
  SegmentHeader header;
  header.generation = message.generation();
  header.collective = message.collective();
  header.sender_rank = static_cast<int>(message.sender_rank());
  header.step = static_cast<int>(message.step());
  header.chunk = static_cast<int>(message.chunk());
  header.offset = message.offset();
  header.total_elements = message.total_elements();
  header.dtype = message.dtype();
  header.control = message.control();
  return header;
}

}  // namespace

grpc::ByteBuffer EncodeSegment(const SegmentHeader& header, absl::Span<const char> payload) {
  return EncodeFilledSegment(header, payload.size(),
                             [&](char* out) { std::memcpy(out, payload.data(), payload.size()); });
}

grpc::ByteBuffer EncodeFilledSegment(const SegmentHeader& header, size_t payload_bytes,
                                     absl::FunctionRef<void(char*)> fill) {
  return EncodeWithPayload(HeaderProto(header), kPayloadField, payload_bytes, fill);
}

grpc::ByteBuffer EncodeForwardedSegment(const SegmentHeader& header,
                                        const SegmentPayload& payload) {
  return EncodeWithPieces(HeaderProto(header), kPayloadField, payload.pieces(), payload.owner());
}

absl::StatusOr<Segment> DecodeSegment(grpc::ByteBuffer& message) {
  proto::RingSegment head;
  absl::StatusOr<ReceivedPayload> payload = DecodeWithPayload(message, kPayloadField, head);
  if (!payload.ok()) return payload.status();
  return Segment{FromProto(head),
                 SegmentPayload(std::move(payload->pieces), std::move(payload->owner))};
}

}  // namespace ringside::ring
