// A protobuf message carrying one large `bytes` field (the payload: a ring segment's, a push's, a
// reply's values) on the wire without protobuf's copies of it. The bytes are a protobuf encoding
// of the message (its other fields, then the payload field: protobuf parses fields in any order),
// so a peer may still send and parse the generated message; only the copies differ:
//   encode: the header's fields, the payload's tag and length and the payload itself go into one
//           gRPC slice, the payload written straight into it by the caller (one copy); or a
//           payload held elsewhere is referenced by slices of its own (zero copies);
//   decode: the header's few bytes are parsed by protobuf itself; the payload stays in the
//           slices gRPC received it in (zero copies), and the result holds references to them.
// Pure functions; thread-safe. Errors: INVALID_ARGUMENT for a message protobuf would not parse,
// or one with a group (wire types 3 and 4, which no Ringside message has), naming the message
// type and what is wrong.
#ifndef RINGSIDE_COMMON_PAYLOAD_CODEC_H_
#define RINGSIDE_COMMON_PAYLOAD_CODEC_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"

namespace ringside {

// A received payload: its bytes in order, in pieces of the slices gRPC read the message into
// (so a piece may end in the middle of an element), and the owner that keeps them alive.
struct ReceivedPayload {
  std::vector<absl::string_view> pieces;
  std::shared_ptr<const void> owner;
  size_t size = 0;  // the pieces' bytes in all
};

// `header` (whose payload field must be empty) and then field `payload_field` of `payload_size`
// bytes, which `fill` writes into the slice (it is given where they start). One slice.
grpc::ByteBuffer EncodeWithPayload(const google::protobuf::MessageLite& header, int payload_field,
                                   size_t payload_size, absl::FunctionRef<void(char*)> fill);

// The same message, with a payload already in memory (a received one, passed on): the prefix
// goes into a slice of its own and each piece into a slice that references it, holding a
// reference to `owner` until gRPC releases the slice. Copies no payload byte.
grpc::ByteBuffer EncodeWithPieces(const google::protobuf::MessageLite& header, int payload_field,
                                  const std::vector<absl::string_view>& pieces,
                                  const std::shared_ptr<const void>& owner);

// Parses `message` into `header`, all but field `payload_field` (the last occurrence of it as a
// length-delimited field is the payload, as protobuf keeps the last), and returns the payload.
absl::StatusOr<ReceivedPayload> DecodeWithPayload(grpc::ByteBuffer& message, int payload_field,
                                                  google::protobuf::MessageLite& header);

// A received payload's bytes in one piece, for a reader that needs them so (a compressed
// segment's decoder): its one piece itself, copying nothing (none: empty), else the pieces
// joined into `joined`, which the result then views.
absl::string_view ContiguousBytes(absl::Span<const absl::string_view> pieces, std::string& joined);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_PAYLOAD_CODEC_H_
