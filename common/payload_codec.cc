#include "common/payload_codec.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace ringside {
namespace {

using google::protobuf::MessageLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

constexpr uint32_t kWireVarint = 0, kWireFixed64 = 1, kWireLength = 2, kWireFixed32 = 5;

absl::Status Malformed(const MessageLite& header, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", header.GetTypeName(), ": ", what));
}

// A tag or a length as protobuf's parser reads them: a varint of at most 5 bytes within 32 bits.
// CodedInputStream's ReadTag and ReadVarint32 take up to 10 bytes and drop the high bits, which
// would accept messages protobuf refuses.
bool ReadShortVarint32(CodedInputStream& input, uint32_t* value) {
  const int start = input.CurrentPosition();
  uint64_t wide = 0;
  if (!input.ReadVarint64(&wide) || input.CurrentPosition() - start > 5 || wide > UINT32_MAX) {
    return false;
  }
  *value = static_cast<uint32_t>(wide);
  return true;
}

// Runs `piece` on the parts of the slices that hold bytes [begin, end) of the message, in order.
template <typename Piece>
void ForEachPiece(const std::vector<grpc::Slice>& slices, uint64_t begin, uint64_t end,
                  Piece&& piece) {
  uint64_t position = 0;
  for (const grpc::Slice& slice : slices) {
    const uint64_t slice_end = position + slice.size();
    if (slice_end > begin && position < end) {
      const uint64_t from = std::max(begin, position), to = std::min(end, slice_end);
      piece(absl::string_view(reinterpret_cast<const char*>(slice.begin()) + (from - position),
                              to - from));
    }
    position = slice_end;
    if (position >= end) return;
  }
}

struct FieldLayout {
  std::vector<std::pair<uint64_t, uint64_t>> header;  // byte ranges of every other field
  int64_t payload_start = -1;
  uint64_t payload_size = 0;
};

// Where each top-level field lies. Every byte belongs to a field, as protobuf requires: a tag cut
// short, too long, zero or of field number 0 is malformed wherever it is.
absl::StatusOr<FieldLayout> ScanFields(grpc::ByteBuffer& message, int payload_field,
                                       const MessageLite& header) {
  grpc::ProtoBufferReader reader(&message);
  CodedInputStream input(&reader);
  const int64_t length = static_cast<int64_t>(message.Length());
  input.SetTotalBytesLimit(static_cast<int>(length));
  FieldLayout layout;
  while (input.CurrentPosition() < length) {
    const int start = input.CurrentPosition();
    uint32_t tag = 0;
    if (!ReadShortVarint32(input, &tag)) return Malformed(header, "truncated or overlong tag");
    const int field = static_cast<int>(tag >> 3);
    const uint32_t wire = tag & 7;
    if (field == 0) return Malformed(header, absl::StrCat("tag ", tag, " has field number 0"));
    if (wire == kWireLength) {
      uint32_t size = 0;
      if (!ReadShortVarint32(input, &size)) {
        return Malformed(header, absl::StrCat("truncated or overlong length of field ", field));
      }
      const int at = input.CurrentPosition();
      if (!input.Skip(static_cast<int>(size))) {
        return Malformed(header, absl::StrCat("field ", field, " shorter than declared"));
      }
      if (field == payload_field) {
        layout.payload_start = at;
        layout.payload_size = size;
        continue;
      }
    } else if (wire == kWireVarint) {
      uint64_t ignored = 0;
      if (!input.ReadVarint64(&ignored)) {
        return Malformed(header, absl::StrCat("truncated varint field ", field));
      }
    } else if (wire == kWireFixed64 || wire == kWireFixed32) {
      if (!input.Skip(wire == kWireFixed64 ? 8 : 4)) {
        return Malformed(header, absl::StrCat("truncated fixed field ", field));
      }
    } else {
      return Malformed(header, absl::StrCat("unsupported wire type ", wire, " of field ", field));
    }
    const uint64_t end = static_cast<uint64_t>(input.CurrentPosition());
    if (!layout.header.empty() && layout.header.back().second == static_cast<uint64_t>(start)) {
      layout.header.back().second = end;  // fields in a row: one range
    } else {
      layout.header.emplace_back(start, end);
    }
  }
  return layout;
}

// The bytes before the payload: `header`'s fields, then the payload field's tag and length.
size_t PrefixSize(const MessageLite& header, int payload_field, size_t payload_size) {
  const uint32_t tag = (static_cast<uint32_t>(payload_field) << 3) | kWireLength;
  return header.ByteSizeLong() + CodedOutputStream::VarintSize32(tag) +
         CodedOutputStream::VarintSize64(payload_size);
}

// Writes the prefix PrefixSize() counted (which cached the header's size); returns its end.
uint8_t* WritePrefix(const MessageLite& header, int payload_field, size_t payload_size,
                     uint8_t* out) {
  const uint32_t tag = (static_cast<uint32_t>(payload_field) << 3) | kWireLength;
  out = header.SerializeWithCachedSizesToArray(out);
  out = CodedOutputStream::WriteVarint32ToArray(tag, out);
  return CodedOutputStream::WriteVarint64ToArray(payload_size, out);
}

// A slice's destroy callback: drops the owner's reference the slice held.
void ReleaseOwner(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }

}  // namespace

grpc::ByteBuffer EncodeWithPayload(const MessageLite& header, int payload_field,
                                   size_t payload_size, absl::FunctionRef<void(char*)> fill) {
  const size_t prefix_size = PrefixSize(header, payload_field, payload_size);
  grpc::Slice slice(prefix_size + payload_size);
  uint8_t* out = const_cast<uint8_t*>(slice.begin());  // freshly allocated, ours to fill
  out = WritePrefix(header, payload_field, payload_size, out);
  if (payload_size > 0) fill(reinterpret_cast<char*>(out));
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer EncodeWithPieces(const MessageLite& header, int payload_field,
                                  const std::vector<absl::string_view>& pieces,
                                  const std::shared_ptr<const void>& owner) {
  size_t payload_size = 0;
  for (absl::string_view piece : pieces) payload_size += piece.size();
  std::vector<grpc::Slice> slices;
  slices.reserve(pieces.size() + 1);
  slices.emplace_back(PrefixSize(header, payload_field, payload_size));
  WritePrefix(header, payload_field, payload_size, const_cast<uint8_t*>(slices[0].begin()));
  for (absl::string_view piece : pieces) {
    if (piece.empty()) continue;
    // gRPC calls ReleaseOwner once it is done with the slice, on whichever thread drops it last:
    // the memory lives exactly as long as the message needs it, and nobody waits for that.
    slices.emplace_back(const_cast<char*>(piece.data()), piece.size(), &ReleaseOwner,
                        new std::shared_ptr<const void>(owner));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::string_view ContiguousBytes(absl::Span<const absl::string_view> pieces, std::string& joined) {
  if (pieces.empty()) return {};
  if (pieces.size() == 1) return pieces[0];
  joined.clear();
  for (absl::string_view piece : pieces) joined.append(piece.data(), piece.size());
  return joined;
}

absl::StatusOr<ReceivedPayload> DecodeWithPayload(grpc::ByteBuffer& message, int payload_field,
                                                  MessageLite& header) {
  if (message.Length() > static_cast<size_t>(INT_MAX)) {
    return Malformed(header, absl::StrCat("message of ", message.Length(), " bytes"));
  }
  auto slices = std::make_shared<std::vector<grpc::Slice>>();
  if (!message.Dump(slices.get()).ok()) return Malformed(header, "unreadable message buffer");
  absl::StatusOr<FieldLayout> layout = ScanFields(message, payload_field, header);
  if (!layout.ok()) return layout.status();
  // The header's fields are a few bytes: protobuf parses a copy of them, with its own rules.
  std::string header_bytes;
  for (const auto& [begin, end] : layout->header) {
    ForEachPiece(*slices, begin, end,
                 [&](absl::string_view piece) { header_bytes.append(piece.data(), piece.size()); });
  }
  if (!header.ParseFromString(header_bytes)) {
    return Malformed(header, "header fields protobuf does not parse");
  }
  ReceivedPayload payload;
  if (layout->payload_start >= 0 && layout->payload_size > 0) {
    const uint64_t begin = static_cast<uint64_t>(layout->payload_start);
    ForEachPiece(*slices, begin, begin + layout->payload_size,
                 [&](absl::string_view piece) { payload.pieces.push_back(piece); });
    payload.size = layout->payload_size;
  }
  payload.owner = std::move(slices);
  return payload;
}

}  // namespace ringside
