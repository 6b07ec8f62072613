// RingSegment on the wire without protobuf copies of the payload. The bytes are exactly the
// protobuf encoding of proto::RingSegment (header fields, then field 9 `payload`), so any gRPC
// client may still send the generated message; only the copies differ:
//   encode: header and payload are written straight into one gRPC slice (one copy), or the
//           payload slice points at the caller's memory (no copy);
//   decode: the payload stays in the slices gRPC received it in (zero copies); the segment
//           holds references to them.
// Pure functions; thread-safe. Errors: INVALID_ARGUMENT for a message that is not a well-formed
// RingSegment (the message says which field).
#ifndef RINGSIDE_RING_SEGMENT_CODEC_H_
#define RINGSIDE_RING_SEGMENT_CODEC_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "ring/segment.h"

namespace ringside::ring {

grpc::ByteBuffer EncodeSegment(const SegmentHeader& header, absl::Span<const char> payload);
absl::StatusOr<Segment> DecodeSegment(grpc::ByteBuffer& message);

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_SEGMENT_CODEC_H_
