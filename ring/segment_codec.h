// RingSegment on the wire without protobuf copies of the payload, by common/payload_codec.h: the
// bytes are a protobuf encoding of proto::RingSegment (header fields, then field 9 `payload`),
// so any gRPC client may still send the generated message. Encoding copies the
// payload once, into the one slice (or the sender writes it there), or, for a payload passed on
// as received, not at all; decoding leaves it in the slices gRPC received it in, and the segment
// holds references to them.
// Pure functions; thread-safe. Errors: INVALID_ARGUMENT for a message that is not a well-formed
// RingSegment (the message says what is wrong).
#ifndef RINGSIDE_RING_SEGMENT_CODEC_H_
#define RINGSIDE_RING_SEGMENT_CODEC_H_

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "ring/segment.h"

namespace ringside::ring {

grpc::ByteBuffer EncodeSegment(const SegmentHeader& header, absl::Span<const char> payload);
// A payload of `payload_bytes` that `fill` writes straight into the message.
grpc::ByteBuffer EncodeFilledSegment(const SegmentHeader& header, size_t payload_bytes,
                                     absl::FunctionRef<void(char*)> fill);
// A payload already in memory, referenced, not copied: the message keeps its owner alive.
grpc::ByteBuffer EncodeForwardedSegment(const SegmentHeader& header, const SegmentPayload& payload);
absl::StatusOr<Segment> DecodeSegment(grpc::ByteBuffer& message);

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_SEGMENT_CODEC_H_
