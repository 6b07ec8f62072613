// common/payload_codec.h against protobuf's own encoding and parser, on messages gRPC could
// deliver in slices cut anywhere.
#include "common/payload_codec.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ps.pb.h"
#include "tests/support/byte_buffers.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

constexpr int kPushPayload = proto::PsPush::kPayloadFieldNumber;

using ::ringside::testing::Flatten;
using ::ringside::testing::SlicedBuffer;

std::string Joined(const ReceivedPayload& payload) {
  std::string bytes;
  for (absl::string_view piece : payload.pieces) bytes.append(piece.data(), piece.size());
  return bytes;
}

proto::PsPush Header() {
  proto::PsPush push;
  push.set_generation(7);
  push.set_worker_rank(3);
  push.set_step(123456789);
  push.set_offset(4096);
  push.set_range_elements(1 << 20);
  push.set_dtype(2);
  push.set_descending(true);
  return push;
}

// The payload goes last, where protobuf writes fields in number order (PsPush's dtype and
// descending follow it): the same message, as protobuf parses it.
TEST(PayloadCodecTest, EncodesAMessageProtobufParsesToTheSameFields) {
  const std::string payload = "0123456789abcdef-payload";
  grpc::ByteBuffer encoded =
      EncodeWithPayload(Header(), kPushPayload, payload.size(),
                        [&](char* out) { std::memcpy(out, payload.data(), payload.size()); });
  proto::PsPush whole = Header();
  whole.set_payload(payload);
  proto::PsPush parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(encoded)));
  EXPECT_EQ(parsed.SerializeAsString(), whole.SerializeAsString());
}

// A received payload passed on (the ring's allgather): the same bytes as protobuf's encoding,
// none of them copied (the message's slices point into the pieces' memory), and the owner kept
// alive exactly as long as the message: released when gRPC drops the last slice.
TEST(PayloadCodecTest, APayloadPassedOnIsReferencedNotCopiedAndReleasedWithTheMessage) {
  auto owner = std::make_shared<std::string>("0123456789abcdef-passed-on-payload");
  const std::vector<absl::string_view> pieces = {absl::string_view(*owner).substr(0, 5),
                                                 absl::string_view(*owner).substr(5, 0),
                                                 absl::string_view(*owner).substr(5)};
  std::vector<grpc::Slice> slices;
  {
    grpc::ByteBuffer encoded = EncodeWithPieces(Header(), kPushPayload, pieces, owner);
    EXPECT_GT(owner.use_count(), 1);
    proto::PsPush whole = Header();
    whole.set_payload(*owner);
    proto::PsPush parsed;
    ASSERT_TRUE(parsed.ParseFromString(Flatten(encoded)));
    EXPECT_EQ(parsed.SerializeAsString(), whole.SerializeAsString());
    ASSERT_TRUE(encoded.Dump(&slices).ok());
  }
  // The prefix, then one slice per non-empty piece, at the piece's own address.
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), owner->data());
  EXPECT_EQ(reinterpret_cast<const char*>(slices[2].begin()), owner->data() + 5);
  EXPECT_GT(owner.use_count(), 1);  // the dumped slices still hold it
  slices.clear();
  EXPECT_EQ(owner.use_count(), 1);
}

TEST(PayloadCodecTest, DecodesAMessageCutAtEveryPositionLikeProtobuf) {
  proto::PsPush whole = Header();
  whole.set_payload(std::string(37, 'x') + "end");
  const std::string bytes = whole.SerializeAsString();
  for (size_t a = 0; a <= bytes.size(); ++a) {
    for (size_t b = a; b <= bytes.size(); b += 5) {
      grpc::ByteBuffer message = SlicedBuffer(bytes, {a, b});
      proto::PsPush header;
      absl::StatusOr<ReceivedPayload> payload = DecodeWithPayload(message, kPushPayload, header);
      ASSERT_TRUE(payload.ok()) << a << " " << b << ": " << payload.status();
      EXPECT_EQ(Joined(*payload), whole.payload());
      EXPECT_EQ(payload->size, whole.payload().size());
      EXPECT_TRUE(header.payload().empty());
      header.set_payload(whole.payload());
      EXPECT_EQ(header.SerializeAsString(), bytes) << a << " " << b;
    }
  }
}

TEST(PayloadCodecTest, TheLastPayloadWinsAndUnknownFieldsAreSkippedAsProtobufDoes) {
  proto::PsPush first;
  first.set_payload("first");
  proto::PsPush second = Header();
  second.set_payload("second");
  // Field 15 (unknown) as a varint, a fixed64 and a length-delimited field, between the two.
  const std::string unknown = std::string("\x78\x05", 2) + std::string("\x79", 1) +
                              std::string(8, '\x01') + std::string("\x7a\x02hi", 4);
  const std::string bytes = first.SerializeAsString() + unknown + second.SerializeAsString();
  proto::PsPush parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  grpc::ByteBuffer message = SlicedBuffer(bytes, {3});
  proto::PsPush header;
  absl::StatusOr<ReceivedPayload> payload = DecodeWithPayload(message, kPushPayload, header);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(Joined(*payload), parsed.payload());
  EXPECT_EQ(header.step(), parsed.step());
  EXPECT_EQ(header.descending(), parsed.descending());
}

TEST(PayloadCodecTest, AnEmptyOrAbsentPayloadHasNoPieces) {
  grpc::ByteBuffer encoded = EncodeWithPayload(Header(), kPushPayload, 0,
                                               [](char*) { ADD_FAILURE() << "nothing to fill"; });
  proto::PsPush header;
  absl::StatusOr<ReceivedPayload> payload = DecodeWithPayload(encoded, kPushPayload, header);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(payload->size, 0u);
  EXPECT_TRUE(payload->pieces.empty());
  EXPECT_EQ(header.step(), Header().step());
}

TEST(PayloadCodecTest, RefusesWhatProtobufRefusesNamingTheMessage) {
  proto::PsPush whole = Header();
  whole.set_payload(std::string(64, 'p'));
  const std::string bytes = whole.SerializeAsString();
  struct Case {
    std::string bytes;
    bool protobuf_parses;  // a group: the one refusal protobuf does not share (none is ours)
  };
  const std::vector<Case> malformed = {
      {bytes.substr(0, bytes.size() - 1), false},              // the payload shorter than declared
      {bytes + std::string("\x08", 1), false},                 // a tag without its varint
      {std::string("\x00\x01", 2) + bytes, false},             // field number 0
      {std::string("\x08") + std::string(10, '\xff'), false},  // an overlong varint
      {bytes + std::string("\x32\xff\xff\xff\xff\x0f", 6), false},  // a payload beyond 2^31
      {bytes + std::string("\x0b\x0c", 2), true},                   // a group (wire type 3)
  };
  for (const Case& c : malformed) {
    grpc::ByteBuffer message = SlicedBuffer(c.bytes, {1});
    proto::PsPush header;
    absl::StatusOr<ReceivedPayload> payload = DecodeWithPayload(message, kPushPayload, header);
    ASSERT_FALSE(payload.ok()) << absl::CEscape(c.bytes);
    EXPECT_TRUE(absl::IsInvalidArgument(payload.status())) << payload.status();
    EXPECT_THAT(payload.status().message(), HasSubstr("malformed ringside.proto.PsPush"));
    proto::PsPush parsed;
    EXPECT_EQ(parsed.ParseFromString(c.bytes), c.protobuf_parses) << absl::CEscape(c.bytes);
  }
}

// One piece is viewed where it lies; several are joined; none is empty.
TEST(PayloadCodecTest, ContiguousBytesViewsOnePieceAndJoinsMore) {
  const std::string whole = "abcdef";
  std::string joined;
  const absl::string_view one = ContiguousBytes({absl::string_view(whole)}, joined);
  EXPECT_EQ(one.data(), whole.data()) << "one piece is not copied";
  EXPECT_TRUE(joined.empty());
  const absl::string_view cut = absl::string_view(whole);
  const absl::string_view two = ContiguousBytes({cut.substr(0, 2), cut.substr(2)}, joined);
  EXPECT_EQ(two, "abcdef");
  EXPECT_EQ(two.data(), joined.data());
  EXPECT_TRUE(ContiguousBytes({}, joined).empty());
}

}  // namespace
}  // namespace ringside
