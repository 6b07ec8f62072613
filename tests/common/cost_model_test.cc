#include "common/cost_model.h"

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/randomk_codec.h"
#include "common/ranges.h"
#include "common/sign_codec.h"
#include "common/topk_codec.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(EvenRangesTest, CoversWithoutOverlapAndBalances) {
  for (uint64_t count : {0ull, 1ull, 3ull, 7ull, 8ull, 1000003ull}) {
    for (int parts = 1; parts <= 9; ++parts) {
      const auto ranges = EvenRanges(count, parts);
      ASSERT_EQ(ranges.size(), static_cast<size_t>(parts));
      uint64_t next = 0, smallest = count, largest = 0;
      for (const auto& r : ranges) {
        EXPECT_EQ(r.begin, next);
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1u) << count << " in " << parts;
    }
  }
}

TEST(RingCostTest, MatchesTwoNMinusOneOverNWhenDivisible) {
  for (int world = 1; world <= 8; ++world) {
    const uint64_t elements = 840 * 1000;  // divisible by 1..8
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(RingElementsSentByRank(elements, world, rank), 2 * (world - 1) * elements / world);
    }
  }
}

TEST(RingCostTest, UsesRealChunkSizesWhenNotDivisible) {
  // 10 elements over 4 ranks: chunks 3,3,2,2. Rank r skips chunks r+1 and r+2.
  EXPECT_EQ(RingElementsSentByRank(10, 4, 0), 20u - 3 - 2);
  EXPECT_EQ(RingElementsSentByRank(10, 4, 1), 20u - 2 - 2);
  EXPECT_EQ(RingElementsSentByRank(10, 4, 2), 20u - 2 - 3);
  EXPECT_EQ(RingElementsSentByRank(10, 4, 3), 20u - 3 - 3);
  EXPECT_EQ(RingElementsSentByRank(2, 4, 0), 4u - 1 - 0);
}

TEST(RingCostTest, ABufferPastAPieceIsCountedPieceByPiece) {
  EXPECT_EQ(RingPieces(kRingPieceElements).size(), 1u);
  EXPECT_EQ(RingPieces(0).size(), 1u);
  const std::vector<ElementRange> pieces = RingPieces(2 * kRingPieceElements + 1);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces, EvenRanges(2 * kRingPieceElements + 1, 3));
  // Three pieces of 1,398,102 / 1,398,102 / 1,398,101 elements over 4 ranks, each with chunks
  // of its own: each piece counts on its own.
  const uint64_t elements = 2 * kRingPieceElements + 1;
  for (int rank = 0; rank < 4; ++rank) {
    uint64_t by_piece = 0;
    for (const ElementRange& piece : pieces) {
      by_piece += RingElementsSentByRank(piece.size(), 4, rank);
    }
    EXPECT_EQ(RingElementsSentByRank(elements, 4, rank), by_piece) << rank;
  }
  // Divisible pieces: still 2(N-1)K/N.
  EXPECT_EQ(RingElementsSentByRank(4 * kRingPieceElements, 4, 1), 6 * kRingPieceElements);
}

TEST(PsCostTest, ShardLinksSumToAllParameters) {
  for (int shards = 1; shards <= 5; ++shards) {
    uint64_t total = 0;
    for (int s = 0; s < shards; ++s) total += PsElementsPerShardLink(1001, shards, s);
    EXPECT_EQ(total, 1001u);
  }
}

TEST(BusiestNodeTest, PsIsTheFullestShardUnlessAWorkersPullIsLarger) {
  constexpr uint64_t kK = 1 << 20;
  EXPECT_EQ(PsBusiestNode(kK, 4, 1).elements, 4 * kK);  // one shard takes every push
  EXPECT_EQ(PsBusiestNode(kK, 4, 1).name, "ps-0");
  EXPECT_EQ(PsBusiestNode(kK, 4, 2).elements, 2 * kK);
  EXPECT_EQ(PsBusiestNode(kK, 4, 4).elements, kK);
  EXPECT_EQ(PsBusiestNode(kK, 2, 4).elements, kK);  // S > N: a worker's pull is larger
  EXPECT_EQ(PsBusiestNode(kK, 2, 4).name, "worker-0");
  EXPECT_EQ(PsBusiestNode(10, 4, 3).elements, 4u * 4);  // the fullest shard has 4 of 10
  EXPECT_EQ(PsLargestShardIngress(10, 4, 3), 4u * 4);
  EXPECT_EQ(PsBusiestNode(kK, 4, 0).elements, 0u);
}

TEST(BusiestNodeTest, RingIsTheReceiverOfTheLargestSender) {
  constexpr uint64_t kK = 1 << 20;
  EXPECT_EQ(RingBusiestNode(kK, 2).elements, kK);          // 2(N-1)/N = 1
  EXPECT_EQ(RingBusiestNode(kK, 4).elements, kK * 3 / 2);  // 1.5
  EXPECT_EQ(RingBusiestNode(kK, 1).elements, 0u);
  // 10 over 4 ranks: chunks 3,3,2,2; rank r sends 20 - |c(r+1)| - |c(r+2)|, most by rank 1
  // (skips chunks 2 and 3), so worker-2 receives the most.
  EXPECT_EQ(RingBusiestNode(10, 4).elements, 16u);
  EXPECT_EQ(RingBusiestNode(10, 4).name, "worker-2");
}

}  // namespace
}  // namespace ringside

namespace ringside {
namespace {

// 784,1024,1024,10: the communication-heavy model.
constexpr uint64_t kHeavy = 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10;

TEST(SyncBoundTest, RingIsTwoNMinusOneOverNTimesKBytesOverRate) {
  const double rate = 100e6 / 8;  // 100mbit in bytes per second
  for (int workers : {2, 3, 4, 8}) {
    const uint64_t elements = 1000 * 840;  // divisible by every world here
    const double bytes = 2.0 * (workers - 1) / workers * elements * 4;
    EXPECT_DOUBLE_EQ(SyncBoundSeconds(SyncMode::kRing, elements, workers, 0, 4, rate), bytes / rate)
        << workers << " workers";
  }
  // 4 workers on the heavy model at 100mbit: 2·3/4·K·4 bytes ÷ 12.5 MB/s.
  EXPECT_NEAR(SyncBoundSeconds(SyncMode::kRing, kHeavy, 4, 2, 4, 12.5e6), 1.5 * kHeavy * 4 / 12.5e6,
              1e-6);
  // One worker syncs nothing.
  EXPECT_EQ(SyncBoundSeconds(SyncMode::kRing, kHeavy, 1, 0, 4, 12.5e6), 0);
}

TEST(SyncBoundTest, PsIsTheBusiestOfShardIngressShardEgressAndWorkerK) {
  // 4 workers, 2 shards: a shard receives N·K/S = 2K, more than a worker's K.
  EXPECT_EQ(BusiestLinkElements(SyncMode::kPs, 1000, 4, 2), 2000u);
  // 2 workers, 4 shards: a shard receives K/2, a worker K: the worker's link is the limit.
  EXPECT_EQ(BusiestLinkElements(SyncMode::kPs, 1000, 2, 4), 1000u);
  // Uneven ranges: the fullest shard (ceil) counts.
  EXPECT_EQ(BusiestLinkElements(SyncMode::kPs, 1001, 4, 2), 4u * 501);
  // One worker: its K, whatever the shards.
  EXPECT_EQ(BusiestLinkElements(SyncMode::kPs, 1000, 1, 1), 1000u);
  EXPECT_NEAR(SyncBoundSeconds(SyncMode::kPs, kHeavy, 4, 2, 4, 12.5e6),
              4.0 * ((kHeavy + 1) / 2) * 4 / 12.5e6, 1e-9);
}

TEST(SyncBoundTest, DegenerateInputsGiveZeroNotNonsense) {
  EXPECT_EQ(SyncBoundSeconds(SyncMode::kPs, 1000, 0, 2, 4, 1e6), 0);
  EXPECT_EQ(SyncBoundSeconds(SyncMode::kPs, 1000, 4, 0, 4, 1e6), 0);
  EXPECT_EQ(SyncBoundSeconds(SyncMode::kRing, 1000, 4, 0, 4, 0), 0);
  EXPECT_EQ(SyncBoundSeconds(SyncMode::kRing, 1000, 4, 0, 4, -1), 0);
}

// --wire_dtype: every link's payload in bytes is its elements times the wire type's width, so
// fp16 and bf16 carry exactly half of fp32's at any size, divisible or not.
TEST(WireBytesTest, SixteenBitDtypesHalveEveryLinkExactlyAtOddSizes) {
  for (uint64_t elements : {uint64_t{1}, uint64_t{7}, uint64_t{1003}, uint64_t{999983}}) {
    for (int n : {2, 3, 5, 8}) {
      for (int r = 0; r < n; ++r) {
        const uint64_t fp32 = RingBytesSentByRank(elements, n, r, WireDtype::kFp32);
        EXPECT_EQ(fp32, RingElementsSentByRank(elements, n, r) * 4);
        EXPECT_EQ(RingBytesSentByRank(elements, n, r, WireDtype::kFp16) * 2, fp32);
        EXPECT_EQ(RingBytesSentByRank(elements, n, r, WireDtype::kBf16) * 2, fp32);
      }
      for (int s = 0; s < n; ++s) {
        const uint64_t fp32 = PsBytesPerShardLink(elements, n, s, WireDtype::kFp32);
        EXPECT_EQ(fp32, PsElementsPerShardLink(elements, n, s) * 4);
        EXPECT_EQ(PsBytesPerShardLink(elements, n, s, WireDtype::kFp16) * 2, fp32);
        EXPECT_EQ(PsBytesPerShardLink(elements, n, s, WireDtype::kBf16) * 2, fp32);
      }
    }
  }
}

// --compression: a link's bytes are its segments' payloads, each the codec's size of its own
// length, worked out by hand here at odd sizes (1001 elements in segments of 256: 256, 256, 256,
// 233).
TEST(CompressedBytesTest, EachSegmentCostsItsCodecsBytes) {
  EXPECT_EQ(SegmentLengths(1001, 256), (std::vector<uint64_t>{256, 256, 256, 233}));
  EXPECT_EQ(SegmentLengths(256, 256), (std::vector<uint64_t>{256}));
  EXPECT_TRUE(SegmentLengths(0, 256).empty());
  const std::vector<uint64_t> segments = SegmentLengths(1001, 256);
  // top-k 0.01: k = 3 of each (ceil 2.56, ceil 2.33): 4 + 8·3 bytes each.
  const std::unique_ptr<GradientCodec> topk_codec = MakeTopKCodec(0.01f);
  const GradientCodec& topk = *topk_codec;
  EXPECT_EQ(CompressedLinkBytes(topk, segments), 4 * (4 + 8 * 3));
  // sign: a scale and ceil(n/8) bytes: 4 + 32 three times, 4 + 30 once.
  EXPECT_EQ(CompressedLinkBytes(*MakeSignCodec(), segments), 3 * 36 + 34);
  // random-k 0.1: 26, 26, 26, 24 values of 4 bytes, no indices.
  EXPECT_EQ(CompressedLinkBytes(*MakeRandomKCodec(0.1f), segments), 4 * (26 + 26 + 26 + 24));
  // One segment of a single element still sends one value.
  EXPECT_EQ(CompressedLinkBytes(topk, SegmentLengths(1, 256)), 4 + 8);
}

// --bucket_bytes: a step is one allreduce per bucket, each cut into its own chunks, so a rank
// sends the sum of its share of each (odd sizes: not the whole vector's figure).
TEST(CostModelTest, ABucketedRingStepSendsEachBucketsShare) {
  const std::vector<uint64_t> buckets = {48, 418, 518};
  for (int world : {1, 2, 3, 4, 7}) {
    for (int rank = 0; rank < world; ++rank) {
      uint64_t sum = 0;
      for (uint64_t b : buckets) sum += RingElementsSentByRank(b, world, rank);
      EXPECT_EQ(RingElementsSentByRank(buckets, world, rank), sum) << world << " " << rank;
    }
  }
  // One bucket is the unbucketed step.
  const std::vector<uint64_t> whole = {984};
  EXPECT_EQ(RingElementsSentByRank(whole, 3, 1), RingElementsSentByRank(984, 3, 1));
  EXPECT_EQ(RingBusiestNode(whole, 3).elements, RingBusiestNode(984, 3).elements);
  EXPECT_EQ(RingBusiestNode(buckets, 2).elements, 984u);  // N = 2: every rank sends K
}

// --slow_link: every node's link at its own rate. The ring waits for its slowest worker at every
// step of the pipeline; the PS for whichever worker (K) or shard (N·K/S) drains last.
TEST(SyncBottleneckTest, RingWaitsForTheSlowestWorkersLink) {
  const uint64_t elements = 840 * 1000;
  const double fast = 100e6 / 8, slow = 20e6 / 8;
  const auto rate_of = [&](const std::string& node) { return node == "worker-3" ? slow : fast; };
  const SyncBottleneck ring = FindSyncBottleneck(
      NodeLinkLoads(SyncMode::kRing, PsPlacement::kSeparate, elements, 4, 2), 4, rate_of);
  EXPECT_EQ(ring.node, "worker-3");
  EXPECT_EQ(ring.bytes, 2 * 3 * elements / 4 * 4);  // 2(N-1)/N·K·4 B
  EXPECT_DOUBLE_EQ(ring.bytes_per_second, slow);
  EXPECT_DOUBLE_EQ(ring.seconds, 2.0 * 3 / 4 * elements * 4 / slow);
  // Uniform rates: the busiest node's bytes at that rate, SyncBoundSeconds.
  const SyncBottleneck uniform =
      FindSyncBottleneck(NodeLinkLoads(SyncMode::kRing, PsPlacement::kSeparate, 1001, 4, 2), 4,
                         [&](const std::string&) { return fast; });
  EXPECT_DOUBLE_EQ(uniform.seconds, SyncBoundSeconds(SyncMode::kRing, 1001, 4, 2, 4, fast));
}

TEST(SyncBottleneckTest, PsWaitsForTheNodeThatDrainsLast) {
  const uint64_t k = 1000;
  const double fast = 100e6 / 8;
  const auto loads = NodeLinkLoads(SyncMode::kPs, PsPlacement::kSeparate, k, 4, 2);
  ASSERT_EQ(loads.size(), 6u);
  EXPECT_EQ(loads[0].node, "worker-0");
  EXPECT_EQ(loads[0].elements, k);  // a worker: K each way
  EXPECT_EQ(loads[4].node, "ps-0");
  EXPECT_EQ(loads[4].elements, 4 * k / 2);  // a shard: N·K/S each way
  // Uniform: the shards (2K) are the limit.
  EXPECT_EQ(FindSyncBottleneck(loads, 4, [&](const std::string&) { return fast; }).node, "ps-0");
  // A worker at a third of the rate: its K takes 1.5× a shard's 2K.
  const SyncBottleneck slow_worker = FindSyncBottleneck(
      loads, 4, [&](const std::string& node) { return node == "worker-2" ? fast / 3 : fast; });
  EXPECT_EQ(slow_worker.node, "worker-2");
  EXPECT_EQ(slow_worker.bytes, k * 4);
  EXPECT_DOUBLE_EQ(slow_worker.seconds, k * 4 / (fast / 3));
  // A slow shard: its N·K/S at its rate.
  const SyncBottleneck slow_shard = FindSyncBottleneck(
      loads, 4, [&](const std::string& node) { return node == "ps-1" ? fast / 2 : fast; });
  EXPECT_EQ(slow_shard.node, "ps-1");
  EXPECT_EQ(slow_shard.bytes, 2 * k * 4);
  // No positive rate: nothing to wait for, not a division by zero.
  EXPECT_TRUE(FindSyncBottleneck(loads, 4, [](const std::string&) { return 0.0; }).node.empty());
}

// --colocate: host h holds worker h and shard h; its link carries worker h's pushes to the other
// N-1 shards and shard h's replies to the other N-1 workers, each way: 2(N-1)K/N, the ring's.
TEST(ColocatedPsTest, EachHostCarriesTheRingsBytesEachWay) {
  const uint64_t k = 840 * 1000;  // divisible by every N here
  for (int n : {2, 3, 4, 8}) {
    for (int h = 0; h < n; ++h) {
      EXPECT_EQ(ColocatedPsHostElements(k, n, h), 2 * (n - 1) * k / n) << n << " " << h;
      EXPECT_EQ(ColocatedPsHostElements(k, n, h), RingElementsSentByRank(k, n, h));
    }
  }
  EXPECT_EQ(ColocatedPsHostElements(1000, 1, 0), 0u);  // one host: nothing crosses a link
  // Uneven ranges (10 over 4: 3,3,2,2): K - |range h| + (N-1)·|range h|.
  EXPECT_EQ(ColocatedPsHostElements(10, 4, 0), 10u - 3 + 3 * 3);
  EXPECT_EQ(ColocatedPsHostElements(10, 4, 3), 10u - 2 + 3 * 2);
  // The loads: one per host (no separate shard nodes), a slow host is the bottleneck.
  const auto loads = NodeLinkLoads(SyncMode::kPs, PsPlacement::kColocated, k, 4, 4);
  ASSERT_EQ(loads.size(), 4u);
  EXPECT_EQ(loads[1].node, "worker-1");
  EXPECT_EQ(loads[1].elements, 2 * 3 * k / 4);
  const SyncBottleneck slow = FindSyncBottleneck(
      loads, 4, [](const std::string& node) { return node == "worker-1" ? 1e6 : 4e6; });
  EXPECT_EQ(slow.node, "worker-1");
  EXPECT_DOUBLE_EQ(slow.seconds, 2.0 * 3 / 4 * k * 4 / 1e6);
  // S != N cannot be colocated one to one: the separate placement's loads.
  EXPECT_EQ(NodeLinkLoads(SyncMode::kPs, PsPlacement::kColocated, k, 4, 2).size(), 6u);
}

}  // namespace
}  // namespace ringside
