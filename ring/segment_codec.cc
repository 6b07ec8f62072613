#include "ring/segment_codec.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/ring.pb.h"

namespace ringside::ring {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

constexpr int kPayloadField = proto::RingSegment::kPayloadFieldNumber;
constexpr int kControlField = proto::RingSegment::kControlFieldNumber;
constexpr uint32_t kWireVarint = 0, kWireFixed64 = 1, kWireLength = 2, kWireFixed32 = 5;

proto::RingSegment HeaderProto(const SegmentHeader& header) {
  proto::RingSegment message;
  message.set_generation(header.generation);
  message.set_collective(header.collective);
  message.set_sender_rank(static_cast<uint32_t>(header.sender_rank));
  message.set_step(static_cast<uint32_t>(header.step));
  message.set_chunk(static_cast<uint32_t>(header.chunk));
  message.set_offset(header.offset);
  message.set_total_elements(header.total_elements);
  message.set_dtype(static_cast<uint32_t>(header.dtype));
  message.set_control(header.control);
  return message;
}

// The received slices a payload lies in, kept alive as long as any segment refers to them.
struct ReceivedSlices {
  std::vector<grpc::Slice> slices;
};

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed RingSegment: ", what));
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

}  // namespace

namespace {

// Header fields and the payload's tag and length: everything of the encoding but its bytes.
grpc::Slice EncodePrefix(const SegmentHeader& header, size_t payload_size, size_t reserve) {
  const proto::RingSegment head = HeaderProto(header);
  const size_t head_size = head.ByteSizeLong();
  const uint32_t tag = (kPayloadField << 3) | kWireLength;
  const size_t prefix_size = head_size + CodedOutputStream::VarintSize32(tag) +
                             CodedOutputStream::VarintSize64(payload_size);
  grpc::Slice slice(prefix_size + reserve);
  uint8_t* out = const_cast<uint8_t*>(slice.begin());  // freshly allocated, ours to fill
  out = head.SerializeWithCachedSizesToArray(out);
  out = CodedOutputStream::WriteVarint32ToArray(tag, out);
  CodedOutputStream::WriteVarint64ToArray(payload_size, out);
  return slice;
}

}  // namespace

grpc::ByteBuffer EncodeSegment(const SegmentHeader& header, absl::Span<const char> payload) {
  grpc::Slice slice = EncodePrefix(header, payload.size(), payload.size());
  if (!payload.empty()) {
    std::memcpy(const_cast<uint8_t*>(slice.end()) - payload.size(), payload.data(), payload.size());
  }
  return grpc::ByteBuffer(&slice, 1);
}

absl::StatusOr<Segment> DecodeSegment(grpc::ByteBuffer& message) {
  auto received = std::make_shared<ReceivedSlices>();
  if (!message.Dump(&received->slices).ok()) return Malformed("unreadable message buffer");
  grpc::ProtoBufferReader reader(&message);
  CodedInputStream input(&reader);
  input.SetTotalBytesLimit(static_cast<int>(std::min<size_t>(message.Length(), INT32_MAX)));
  Segment segment;
  SegmentHeader& h = segment.header;
  // An absent field is zero, as protobuf parses it (proto3 never sends a zero): a dtype left out
  // is DType::kInvalid, which the inbox refuses, not SegmentHeader's default of float32.
  h.dtype = DType::kInvalid;
  int64_t payload_start = -1;
  uint64_t payload_size = 0;
  // Every byte belongs to a field, as protobuf requires: a tag cut short, too long, zero or of
  // field number 0 is malformed wherever it is (a loop on ReadTag() would end there instead).
  const int64_t message_length = static_cast<int64_t>(message.Length());
  while (input.CurrentPosition() < message_length) {
    uint32_t tag = 0;
    if (!ReadShortVarint32(input, &tag)) return Malformed("truncated or overlong tag");
    const int field = static_cast<int>(tag >> 3);
    if (field == 0) return Malformed(absl::StrCat("tag ", tag, " has field number 0"));
    const uint32_t wire = tag & 7;
    if (wire == kWireVarint && ((field >= 1 && field <= 8) || field == kControlField)) {
      uint64_t value = 0;
      if (!input.ReadVarint64(&value)) return Malformed(absl::StrCat("truncated field ", field));
      switch (field) {
        case 1:
          h.generation = value;
          break;
        case 2:
          h.collective = value;
          break;
        case 3:
          h.sender_rank = static_cast<int>(static_cast<uint32_t>(value));
          break;
        case 4:
          h.step = static_cast<int>(static_cast<uint32_t>(value));
          break;
        case 5:
          h.chunk = static_cast<int>(static_cast<uint32_t>(value));
          break;
        case 6:
          h.offset = value;
          break;
        case 7:
          h.total_elements = value;
          break;
        case 8:
          h.dtype = static_cast<DType>(static_cast<uint32_t>(value));
          break;
        case kControlField:
          h.control = value != 0;
          break;
      }
    } else if (wire == kWireLength && field == kPayloadField) {
      uint32_t length = 0;
      if (!ReadShortVarint32(input, &length))
        return Malformed("truncated or overlong payload length");
      payload_start = input.CurrentPosition();
      payload_size = length;
      if (!input.Skip(static_cast<int>(length))) return Malformed("payload shorter than declared");
    } else if (wire == kWireVarint) {  // unknown fields are skipped, as protobuf does
      uint64_t ignored;
      if (!input.ReadVarint64(&ignored)) return Malformed("truncated varint");
    } else if (wire == kWireLength) {
      uint32_t length = 0;
      if (!ReadShortVarint32(input, &length) || !input.Skip(static_cast<int>(length))) {
        return Malformed("truncated length-delimited field");
      }
    } else if (wire == kWireFixed64 || wire == kWireFixed32) {
      if (!input.Skip(wire == kWireFixed64 ? 8 : 4)) return Malformed("truncated fixed field");
    } else {
      return Malformed(absl::StrCat("unsupported wire type ", wire, " of field ", field));
    }
  }
  std::vector<absl::string_view> pieces;
  if (payload_start >= 0 && payload_size > 0) {
    uint64_t begin = static_cast<uint64_t>(payload_start), end = begin + payload_size;
    uint64_t position = 0;
    for (const grpc::Slice& slice : received->slices) {
      const uint64_t slice_end = position + slice.size();
      if (slice_end > begin && position < end) {
        const uint64_t from = std::max(begin, position), to = std::min(end, slice_end);
        pieces.emplace_back(reinterpret_cast<const char*>(slice.begin()) + (from - position),
                            to - from);
      }
      position = slice_end;
    }
  }
  segment.payload = SegmentPayload(std::move(pieces), std::move(received));
  return segment;
}

}  // namespace ringside::ring
