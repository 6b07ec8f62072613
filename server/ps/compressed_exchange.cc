#include "server/ps/compressed_exchange.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace ringside::server {

std::string WorkerCompression::EncodePush(int64_t step, uint64_t at,
                                          absl::Span<const float> segment) {
  std::string wire(codec_.EncodedBytes(segment.size()), '\0');
  feedback_.Encode(codec_, SegmentKey{seed_, step, at}, at, segment, wire.data());
  return wire;
}

absl::Status WorkerCompression::DecodeReply(int64_t step, uint64_t at, absl::string_view reply,
                                            absl::Span<float> out) const {
  return codec_.Decode(SegmentKey{seed_, step, at}, reply, out);
}

absl::Status ShardCompression::SumPushes(int64_t step, uint64_t at,
                                         absl::Span<const absl::string_view> pushes,
                                         absl::Span<float> sum) const {
  const SegmentKey key = KeyOf(step, at);
  // Every payload checked before any is added: a bad one from the last rank must not leave the
  // others' values in the sum.
  for (size_t rank = 0; rank < pushes.size(); ++rank) {
    if (absl::Status status = codec_.Check(key, pushes[rank], sum.size()); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("worker ", rank, "'s push of step ", step,
                                                     " at ", at, ": ", status.message()));
    }
  }
  for (const absl::string_view push : pushes) {
    const absl::Status added = codec_.DecodeAdd(key, push, sum);
    assert(added.ok());  // checked above
    (void)added;
  }
  return absl::OkStatus();
}

std::string ShardCompression::EncodeReply(int64_t step, uint64_t at, absl::Span<const float> sum,
                                          absl::Span<float> applied) {
  const SegmentKey key = KeyOf(step, at);
  std::string wire(codec_.EncodedBytes(sum.size()), '\0');
  feedback_.Encode(codec_, key, at, sum, wire.data());
  const absl::Status decoded = codec_.Decode(key, wire, applied);
  assert(decoded.ok());  // its own encoding of finite values
  (void)decoded;
  return wire;
}

}  // namespace ringside::server
