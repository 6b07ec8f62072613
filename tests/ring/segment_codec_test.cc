// The raw RingSegment codec against protobuf's own encoding, with payloads split across slices
// at arbitrary byte boundaries (as gRPC delivers them).
#include "ring/segment_codec.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "common/wire_dtype.h"
#include "gtest/gtest.h"
#include "proto/ring.pb.h"
#include "tests/support/byte_buffers.h"

namespace ringside::ring {
namespace {

SegmentHeader SomeHeader() {
  SegmentHeader h;
  h.generation = 7;
  h.collective = 123456789012ull;
  h.sender_rank = 3;
  h.step = 5;
  h.chunk = 2;
  h.offset = 1 << 20;
  h.total_elements = 5000000000ull;
  return h;
}

using ::ringside::testing::Flatten;
using ::ringside::testing::SlicedBuffer;

TEST(SegmentCodecTest, EncodesExactlyWhatProtobufWouldParse) {
  const std::vector<float> values = {1.5f, -2.25f, 3e30f};
  const char* bytes = reinterpret_cast<const char*>(values.data());
  grpc::ByteBuffer encoded = EncodeSegment(SomeHeader(), {bytes, values.size() * sizeof(float)});
  proto::RingSegment parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(encoded)));
  EXPECT_EQ(parsed.collective(), 123456789012ull);
  EXPECT_EQ(parsed.total_elements(), 5000000000ull);
  EXPECT_EQ(parsed.sender_rank(), 3u);
  EXPECT_EQ(parsed.payload(), std::string(bytes, values.size() * sizeof(float)));
}

TEST(SegmentCodecTest, DecodesAProtobufMessageSplitAnywhereWithoutCopyingThePayload) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  proto::RingSegment message;
  message.set_step(5);
  message.set_chunk(2);
  message.set_offset(77);
  message.set_total_elements(4000);
  message.set_payload(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  const std::string wire = message.SerializeAsString();
  grpc::ByteBuffer buffer = SlicedBuffer(wire, {3, 10, 11, 1001, 1002, 1003, 2500});
  absl::StatusOr<Segment> segment = DecodeSegment(buffer);
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(segment->header.step, 5);
  EXPECT_EQ(segment->header.offset, 77u);
  EXPECT_EQ(segment->payload.size(), values.size() * 4);
  EXPECT_GT(segment->payload.pieces().size(), 3u);
  std::vector<float> sum(values.size(), 1.0f);
  ASSERT_TRUE(WirePiecesReader(WireDtype::kFp32, segment->payload.pieces())
                  .Read(absl::MakeSpan(sum), /*add=*/true));
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(sum[i], values[i] + 1.0f) << i;
  std::vector<float> copy(values.size());
  ASSERT_TRUE(WirePiecesReader(WireDtype::kFp32, segment->payload.pieces())
                  .Read(absl::MakeSpan(copy), /*add=*/false));
  EXPECT_EQ(copy, values);
}

TEST(SegmentCodecTest, RejectsTruncatedAndGarbledMessages) {
  proto::RingSegment message;
  message.set_step(1);
  message.set_payload(std::string(64, 'x'));
  const std::string wire = message.SerializeAsString();
  grpc::ByteBuffer truncated = SlicedBuffer(wire.substr(0, wire.size() - 5), {4});
  EXPECT_EQ(DecodeSegment(truncated).status().code(), absl::StatusCode::kInvalidArgument);
  grpc::ByteBuffer garbled = SlicedBuffer(std::string("\x4f\xff\xff", 3), {});
  EXPECT_EQ(DecodeSegment(garbled).status().code(), absl::StatusCode::kInvalidArgument);
}

// Found by tests/fuzz/ring_segment_fuzzer: the decoder took messages protobuf refuses (a zero tag
// at the end, a tag cut short, field number 0, a tag or length over 5 bytes), and read a segment
// without dtype as float32 where protobuf reads 0, kNoWireDtypeNumber.
TEST(SegmentCodecTest, DecodesOnlyWhatProtobufParsesAndAsItParsesIt) {
  proto::RingSegment message;
  message.set_step(1);
  message.set_payload(std::string(8, 'x'));
  const std::string wire = message.SerializeAsString();
  for (const std::string& bad :
       {wire + std::string("\x00", 1), wire + "\xff", std::string("\x02\x00", 2),
        std::string("\xa0\x80\x80\x80\x80\x00\x01", 7),
        std::string("\x4a\x81\x80\x80\x80\x80\x00x", 8)}) {
    proto::RingSegment parsed;
    EXPECT_FALSE(parsed.ParseFromString(bad)) << absl::CHexEscape(bad);
    grpc::ByteBuffer buffer = SlicedBuffer(bad, {});
    EXPECT_EQ(DecodeSegment(buffer).status().code(), absl::StatusCode::kInvalidArgument)
        << absl::CHexEscape(bad);
  }
  grpc::ByteBuffer no_dtype = SlicedBuffer(wire, {});
  absl::StatusOr<Segment> segment = DecodeSegment(no_dtype);
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(segment->header.dtype, kNoWireDtypeNumber);
}

}  // namespace
}  // namespace ringside::ring
