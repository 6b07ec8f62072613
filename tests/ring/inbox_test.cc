// Validation of incoming segments: every bad input gets a precise status, and the inbox keeps
// working afterwards.
#include "ring/inbox.h"

#include <memory>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace ringside::ring {
namespace {

constexpr uint64_t kGeneration = 3;
constexpr int kWorld = 4;
constexpr int kRank = 2;  // left neighbour is rank 1

// A valid first segment of `collective` from rank 1 (which sends chunk 1 at step 0). The buffer
// has 40 elements, so chunks have 10 elements each.
Segment FirstSegment(uint64_t collective, uint64_t elements = 10) {
  Segment segment;
  segment.header =
      SegmentHeader{kGeneration, collective, 1, 0, 1, 0, 40, WireDtypeNumber(WireDtype::kFp32)};
  segment.payload = SegmentPayload(std::string(elements * sizeof(float), '\0'));
  return segment;
}

class InboxTest : public ::testing::Test {
 protected:
  RingInbox inbox_{RingTopology{kGeneration, kWorld, kRank}, RingInboxOptions{},
                   LinkReceiveMetrics{}};
  uint64_t stream_ = inbox_.OpenStream();

  void ExpectRejected(Segment segment, absl::StatusCode code, absl::string_view words) {
    const absl::Status status = inbox_.Accept(std::move(segment), stream_);
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_NE(status.message().find(words), absl::string_view::npos) << status;
  }

  // After a rejection the inbox still accepts and delivers a valid collective.
  void ExpectStillWorks(uint64_t collective) {
    inbox_.BeginCollective(collective);
    ASSERT_TRUE(inbox_.Accept(FirstSegment(collective), stream_).ok());
    auto next = inbox_.Next(collective, absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ(next->header.collective, collective);
  }
};

TEST_F(InboxTest, AcceptsAndDeliversInOrder) {
  inbox_.BeginCollective(1);
  Segment a = FirstSegment(1, 4);
  Segment b = FirstSegment(1, 6);
  b.header.offset = 4;
  ASSERT_TRUE(inbox_.Accept(std::move(a), stream_).ok());
  ASSERT_TRUE(inbox_.Accept(std::move(b), stream_).ok());
  auto first = inbox_.Next(1, absl::Now() + absl::Seconds(1));
  auto second = inbox_.Next(1, absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->header.offset, 0u);
  EXPECT_EQ(second->header.offset, 4u);
}

TEST_F(InboxTest, RejectsAnOldGenerationWithoutFailingTheCollective) {
  inbox_.BeginCollective(1);
  Segment segment = FirstSegment(1);
  segment.header.generation = kGeneration - 1;
  ExpectRejected(std::move(segment), absl::StatusCode::kFailedPrecondition, "generation");
  ASSERT_TRUE(inbox_.Accept(FirstSegment(1), stream_).ok());
  auto next = inbox_.Next(1, absl::Now() + absl::Seconds(1));
  EXPECT_TRUE(next.ok()) << "a former neighbour's left-over must not fail the current collective: "
                         << next.status();
}

TEST_F(InboxTest, RejectsAnUnknownSender) {
  Segment segment = FirstSegment(1);
  segment.header.sender_rank = 3;
  ExpectRejected(std::move(segment), absl::StatusCode::kInvalidArgument, "unknown sender");
  ExpectStillWorks(1);
}

TEST_F(InboxTest, RejectsAWrongLength) {
  Segment too_long = FirstSegment(1, 11);
  ExpectRejected(std::move(too_long), absl::StatusCode::kInvalidArgument, "does not fit");
  Segment ragged = FirstSegment(1);
  ragged.payload = SegmentPayload(ragged.payload.ToString() + "x");
  ExpectRejected(std::move(ragged), absl::StatusCode::kInvalidArgument, "whole number");
  ExpectStillWorks(1);
}

TEST_F(InboxTest, RejectsAStepOutsideTheScheduleOrOutOfOrder) {
  Segment beyond = FirstSegment(1);
  beyond.header.step = 2 * (kWorld - 1);
  ExpectRejected(std::move(beyond), absl::StatusCode::kInvalidArgument, "outside");
  Segment wrong_chunk = FirstSegment(1);
  wrong_chunk.header.chunk = 2;
  ExpectRejected(std::move(wrong_chunk), absl::StatusCode::kInvalidArgument, "schedule says");
  Segment skipped = FirstSegment(1);
  skipped.header.step = 1;
  skipped.header.chunk = 0;  // what rank 1 sends at step 1, but step 0 has not arrived
  ExpectRejected(std::move(skipped), absl::StatusCode::kFailedPrecondition, "before");
  ExpectStillWorks(1);
}

TEST_F(InboxTest, RejectsAStaleCollective) {
  inbox_.BeginCollective(5);
  ExpectRejected(FirstSegment(4), absl::StatusCode::kFailedPrecondition, "collective 4");
  ExpectStillWorks(5);
}

TEST_F(InboxTest, RejectsAnUnknownDtype) {
  Segment segment = FirstSegment(1);
  segment.header.dtype = 77;
  ExpectRejected(std::move(segment), absl::StatusCode::kInvalidArgument, "dtype");
}

TEST_F(InboxTest, RejectionAlsoFailsTheLocalCollective) {
  inbox_.BeginCollective(1);
  Segment segment = FirstSegment(1);
  segment.header.sender_rank = 0;
  ASSERT_FALSE(inbox_.Accept(std::move(segment), stream_).ok());
  auto next = inbox_.Next(1, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(InboxTest, AStreamEndingMidwayFailsTheCollective) {
  inbox_.BeginCollective(1);
  ASSERT_TRUE(inbox_.Accept(FirstSegment(1, 4), stream_).ok());
  ASSERT_TRUE(inbox_.Next(1, absl::Now() + absl::Seconds(1)).ok());
  inbox_.StreamEnded(stream_);
  auto next = inbox_.Next(1, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(next.status().code(), absl::StatusCode::kUnavailable) << next.status();
  EXPECT_NE(next.status().message().find("midway"), absl::string_view::npos);
  stream_ = inbox_.OpenStream();
  ExpectStillWorks(2);
}

TEST_F(InboxTest, ASilentNeighbourGivesDeadlineExceeded) {
  inbox_.BeginCollective(1);
  auto next = inbox_.Next(1, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(next.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(InboxTest, ANewCollectiveAbandonsAPartialOne) {
  inbox_.BeginCollective(1);
  ASSERT_TRUE(inbox_.Accept(FirstSegment(1, 4), stream_).ok());
  // The sender gave up on collective 1 and starts collective 2 from the beginning.
  ASSERT_TRUE(inbox_.Accept(FirstSegment(2), stream_).ok());
  inbox_.BeginCollective(2);
  auto next = inbox_.Next(2, absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->header.collective, 2u);
}

TEST_F(InboxTest, ANewerGenerationIsHeldUntilThisWorkerReachesIt) {
  Segment early = FirstSegment(1);
  early.header.generation = kGeneration + 1;
  ASSERT_TRUE(inbox_.Accept(std::move(early), stream_).ok());
  inbox_.BeginCollective(1);
  EXPECT_EQ(inbox_.Next(1, absl::Now() + absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded)
      << "a segment of a generation this worker has not reached must not be delivered";
  inbox_.SetTopology(RingTopology{kGeneration + 1, kWorld, kRank}, LinkReceiveMetrics{});
  inbox_.BeginCollective(1);
  auto next = inbox_.Next(1, absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->header.generation, kGeneration + 1);
}

TEST_F(InboxTest, SupersedingTheGenerationAbortsEvenALaterWait) {
  inbox_.Supersede(kGeneration + 1);
  inbox_.BeginCollective(1);
  const absl::Time start = absl::Now();
  const absl::Status status = inbox_.Next(1, absl::Now() + absl::Seconds(10)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  inbox_.SetTopology(RingTopology{kGeneration + 1, kWorld, kRank}, LinkReceiveMetrics{});
  Segment segment = FirstSegment(1);
  segment.header.generation = kGeneration + 1;
  inbox_.BeginCollective(1);
  ASSERT_TRUE(inbox_.Accept(std::move(segment), stream_).ok());
  EXPECT_TRUE(inbox_.Next(1, absl::Now() + absl::Seconds(1)).ok())
      << "the generation that superseded the old one works normally";
}

TEST(InboxCountingTest, ControlSegmentsAreNotCountedAsTrainingTraffic) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  const LinkReceiveMetrics link = metrics.LinkReceive("worker-1", "worker-2", SyncMode::kRing);
  RingInbox inbox(RingTopology{kGeneration, kWorld, kRank}, RingInboxOptions{}, link);
  const uint64_t stream = inbox.OpenStream();
  Segment control = FirstSegment(1);
  control.header.control = true;
  ASSERT_TRUE(inbox.Accept(std::move(control), stream).ok());
  EXPECT_EQ(link.bytes->Value(), 0.0);
  ASSERT_TRUE(inbox.Accept(FirstSegment(2), stream).ok());
  EXPECT_EQ(link.bytes->Value(), 40.0);
}

TEST(InboxLimitTest, ASenderTooFarAheadIsRefused) {
  RingInboxOptions options;
  options.max_queued_bytes = 40 + kQueuedSegmentOverheadBytes + 10;
  RingInbox inbox(RingTopology{kGeneration, kWorld, kRank}, options, LinkReceiveMetrics{});
  const uint64_t stream = inbox.OpenStream();
  const absl::Status status = inbox.Accept(FirstSegment(1), stream);  // 40 bytes fit
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(inbox.queued_bytes(), 40 + kQueuedSegmentOverheadBytes);
  Segment second = FirstSegment(2);
  EXPECT_EQ(inbox.Accept(std::move(second), stream).code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(inbox.Next(1, absl::Now() + absl::Seconds(1)).ok());
  EXPECT_EQ(inbox.queued_bytes(), 0u);
}

// Found by tests/fuzz/ring_segment_fuzzer: empty segments of a newer generation were held without
// bound (the limit counted payload bytes only), so a sender could pile them up forever.
TEST(InboxLimitTest, EmptySegmentsOfANewerGenerationCountAgainstTheLimit) {
  RingInboxOptions options;
  options.max_held_bytes = 4 * kQueuedSegmentOverheadBytes;
  RingInbox inbox(RingTopology{kGeneration, kWorld, kRank}, options, LinkReceiveMetrics{});
  const uint64_t stream = inbox.OpenStream();
  inbox.BeginCollective(1);
  int held = 0;
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    Segment empty = FirstSegment(1, 0);
    empty.header.generation = kGeneration + 1;
    status = inbox.Accept(std::move(empty), stream);
    if (status.ok()) ++held;
  }
  EXPECT_EQ(held, 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(inbox.queued_bytes(), 0u) << "held apart from the current generation's queue";
  EXPECT_EQ(inbox.Next(1, absl::InfinitePast()).status().code(),
            absl::StatusCode::kDeadlineExceeded)
      << "a refused future segment does not fail the collective in progress";
}

// Issue 13: segments of a generation not reached yet are held under their own cap, which can
// never starve the current generation: at the cap a future segment is refused naming its
// generation, and the current collective's segments still fit the queue.
TEST(InboxLimitTest, HeldFutureSegmentsHaveTheirOwnCapAndNeverStarveTheCurrentGeneration) {
  RingInboxOptions options;
  options.max_queued_bytes = 40 + kQueuedSegmentOverheadBytes;  // one 40-byte segment
  options.max_held_bytes = 2 * (40 + kQueuedSegmentOverheadBytes);
  RingInbox inbox(RingTopology{kGeneration, kWorld, kRank}, options, LinkReceiveMetrics{});
  const uint64_t stream = inbox.OpenStream();
  for (int i = 0; i < 2; ++i) {
    Segment future = FirstSegment(1);
    future.header.generation = kGeneration + 1 + i;
    ASSERT_TRUE(inbox.Accept(std::move(future), stream).ok()) << "two fit the held cap";
  }
  Segment third = FirstSegment(1);
  third.header.generation = uint64_t{1} << 63;
  const absl::Status refused = inbox.Accept(std::move(third), stream);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("generation 9223372036854775808"), std::string::npos) << refused;
  const absl::Status current = inbox.Accept(FirstSegment(1), stream);
  EXPECT_TRUE(current.ok()) << "the current generation's queue is untouched: " << current;
}

}  // namespace
}  // namespace ringside::ring
