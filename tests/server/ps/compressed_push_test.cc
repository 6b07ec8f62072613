// A shard's compressed steps alone (shard_state.h, "Compression"): a bad compressed push (indices
// outside the segment, repeated or unsorted, a count its size disagrees with, a value not
// finite, a segment of another length than the step's, a codec the others do not use, a kind of
// push the step is not) is refused with INVALID_ARGUMENT and changes nothing: the same push made
// well afterwards completes the step, whose reply is the codec's encoding of the sum and whose
// applied values are that encoding decoded.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/compression.h"
#include "common/gradient_codec.h"
#include "gtest/gtest.h"
#include "server/ps/compressed_exchange.h"
#include "server/ps/shard_state.h"
#include "tests/support/topk_payload.h"

namespace ringside::server {
namespace {

constexpr uint64_t kRange = 10;
constexpr uint64_t kSegment = 6;  // segments of 6 and 4
constexpr int kWorkers = 2;

using ringside::testing::TopKPayload;

class CompressedPushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = ShardState::Create(ShardConfig{1, kWorkers, 0}, std::vector<float>(kRange, 1.0f),
                                OptimizerConfig{OptimizerKind::kSgd, 1.0f})
                 .value();
  }

  absl::Status Begin(int worker, const Compression& compression = kTopK) {
    return state_->BeginPush(1, worker, 0, kRange, WireDtype::kFp32, false, compression);
  }
  absl::Status Add(int worker, uint64_t offset, uint64_t elements, const std::string& wire) {
    const absl::string_view view = wire;
    return state_->AddCompressedSegment(worker, 0, offset, elements, absl::MakeConstSpan(&view, 1));
  }
  // Worker `worker`'s whole share, well formed: two of each segment, at its first two elements.
  void PushWell(int worker) {
    ASSERT_TRUE(Add(worker, 0, 6, TopKPayload(2, {0, 1}, {1.0f, 2.0f})).ok());
    ASSERT_TRUE(Add(worker, 6, 4, TopKPayload(2, {0, 1}, {3.0f, 4.0f})).ok());
    ASSERT_TRUE(state_->FinishPush(worker, 0).ok());
  }

  static constexpr Compression kTopK{CompressionKind::kTopK, 0.3f};  // 2 of 6, 2 of 4
  std::unique_ptr<ShardState> state_;
};

TEST_F(CompressedPushTest, EveryMalformedPushIsRefusedAndChangesNothing) {
  ASSERT_TRUE(Begin(0).ok());
  ASSERT_TRUE(Begin(1).ok());
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    const char* what;
    uint64_t offset, elements;
    std::string wire;
  } bad[] = {
      {"index outside the segment", 0, 6, TopKPayload(2, {0, 6}, {1, 2})},
      {"index repeated", 0, 6, TopKPayload(2, {1, 1}, {1, 2})},
      {"indices unsorted", 0, 6, TopKPayload(2, {3, 1}, {1, 2})},
      {"count disagrees with the elements", 0, 6, TopKPayload(3, {0, 1, 2}, {1, 2, 3})},
      {"size disagrees with the count", 0, 6, TopKPayload(2, {0, 1}, {1})},
      {"elements disagree with the payload", 0, 7, TopKPayload(2, {0, 1}, {1, 2})},
      {"value not finite", 0, 6, TopKPayload(2, {0, 1}, {1, inf})},
      {"elements past the range", 0, kRange + 1, TopKPayload(3, {0, 1, 2}, {1, 2, 3})},
      {"no elements", 0, 0, TopKPayload(0, {}, {})},
      {"a segment out of sequence", 6, 4, TopKPayload(2, {0, 1}, {1, 2})},
  };
  for (const auto& push : bad) {
    const absl::Status status = Add(0, push.offset, push.elements, push.wire);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << push.what << ": " << status;
  }
  // Worker 1 sets the step's segment length; worker 0's segment of another is refused.
  ASSERT_TRUE(Add(1, 0, 6, TopKPayload(2, {0, 1}, {1, 2})).ok());
  EXPECT_EQ(Add(0, 0, 5, TopKPayload(2, {0, 1}, {1, 2})).code(),
            absl::StatusCode::kInvalidArgument);
  // An uncompressed segment in a compressed step.
  EXPECT_EQ(state_->AddSegment(0, 0, 0, std::string(6 * sizeof(float), '\0')).code(),
            absl::StatusCode::kInvalidArgument);

  // Nothing of those was kept: worker 0's share made well completes the step.
  PushWell(0);
  ASSERT_TRUE(Add(1, 6, 4, TopKPayload(2, {0, 1}, {3, 4})).ok());
  ASSERT_TRUE(state_->FinishPush(1, 0).ok());
  const ShardState::Applied applied = state_->applied().value();
  ASSERT_EQ(applied.step, 1u);
}

TEST_F(CompressedPushTest, PushesOfAnotherCodecDtypeOrOrderAreRefused) {
  ASSERT_TRUE(Begin(0).ok());
  EXPECT_EQ(Begin(1, Compression{CompressionKind::kSign, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Begin(1, Compression{}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_->BeginPush(1, 1, 0, kRange, WireDtype::kFp16, false, kTopK).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_->BeginPush(1, 1, 0, kRange, WireDtype::kFp32, true, kTopK).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(Begin(1).ok());  // the step's own codec still begins
}

TEST_F(CompressedPushTest, TheReplyIsTheSumsEncodingAndTheShardAppliesItDecoded) {
  ASSERT_TRUE(Begin(0).ok());
  ASSERT_TRUE(Begin(1).ok());
  Summed summed;
  absl::Notification answered;
  state_->WhenSummed(0, kRange - 1, [&](Summed s) {
    summed = std::move(s);
    answered.Notify();
  });
  PushWell(0);
  PushWell(1);
  answered.WaitForNotification();
  ASSERT_NE(summed.encoded, nullptr);
  ASSERT_EQ(summed.encoded->segment_elements, kSegment);
  ASSERT_EQ(summed.encoded->segments.size(), 2u);
  // The sum is [2, 4, 0, 0, 0, 0 | 6, 8, 0, 0]: top-2 of each segment keeps it whole, so the
  // shard's residual stays zero and SGD at rate 1 takes exactly it.
  const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(kTopK);
  std::vector<float> decoded(kRange);
  ASSERT_TRUE(
      codec->Decode({}, summed.encoded->segments[0], absl::MakeSpan(decoded).first(6)).ok());
  ASSERT_TRUE(codec->Decode({}, summed.encoded->segments[1], absl::MakeSpan(decoded).last(4)).ok());
  EXPECT_EQ(decoded, (std::vector<float>{2, 4, 0, 0, 0, 0, 6, 8, 0, 0}));
  const ShardState::Applied applied = state_->applied().value();
  EXPECT_EQ(*applied.values, (std::vector<float>{-1, -3, 1, 1, 1, 1, -5, -7, 1, 1}));
}

}  // namespace
}  // namespace ringside::server
