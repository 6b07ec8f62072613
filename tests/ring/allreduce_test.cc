// The ring allreduce over the in-memory transport, N ranks as N threads.
#include "ring/allreduce.h"

#include <cmath>
#include <random>
#include <set>

#include "common/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ring/memory_transport.h"
#include "tests/ring/ring_test_util.h"

namespace ringside::ring {
namespace {

using testing::ExpectedSum;
using testing::RankInput;
using testing::RunRanks;

struct Case {
  int world;
  uint64_t elements;
};

// Runs one allreduce on every rank; returns each rank's status and buffer.
void RunAllreduce(InMemoryRing& ring, int world, std::vector<std::vector<float>>& buffers,
                  std::vector<absl::Status>& statuses, const AllreduceOptions& options,
                  uint64_t collective) {
  statuses.assign(world, absl::OkStatus());
  RunRanks(world, [&](int rank) {
    RingAllreduce allreduce(ring.transport(rank), LinkSendMetrics{});
    statuses[rank] = allreduce.Run(collective, absl::MakeSpan(buffers[rank]), options);
  });
}

class AllreduceSumTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllreduceSumTest, EveryRankEndsWithTheExactSum) {
  const auto [world, elements] = GetParam();
  InMemoryRing ring(world);
  std::vector<std::vector<float>> buffers;
  for (int r = 0; r < world; ++r) buffers.push_back(RankInput(r, elements));
  AllreduceOptions options;
  // Small segments in small cases force many segments per chunk; large ones keep 16M quick.
  options.segment_bytes = elements > 100000 ? (4 << 20) : 12;
  std::vector<absl::Status> statuses;
  RunAllreduce(ring, world, buffers, statuses, options, /*collective=*/1);
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
    ASSERT_EQ(buffers[r].size(), elements);
    for (uint64_t i = 0; i < elements; ++i) {
      ASSERT_EQ(buffers[r][i], ExpectedSum(world, i)) << "rank " << r << " index " << i;
    }
  }
}

std::vector<Case> SumCases() {
  std::vector<Case> cases;
  for (int world = 1; world <= 8; ++world) {
    // 0, 1, fewer than N, not divisible by N, and 16M (duplicates dropped for small N).
    const std::set<uint64_t> sizes = {0, 1, static_cast<uint64_t>(world - 1),
                                      uint64_t{1000} * world + 3, uint64_t{16} << 20};
    for (uint64_t elements : sizes) cases.push_back({world, elements});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(WorldsAndSizes, AllreduceSumTest, ::testing::ValuesIn(SumCases()),
                         [](const auto& info) {
                           return "N" + std::to_string(info.param.world) + "_K" +
                                  std::to_string(info.param.elements);
                         });

TEST(AllreduceAverageTest, RandomFloatsAverageWithinToleranceAndRanksAreBitIdentical) {
  constexpr int kWorld = 5;
  constexpr uint64_t kElements = 100003;
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> buffers(kWorld, std::vector<float>(kElements));
  std::vector<double> reference(kElements, 0.0);
  for (auto& buffer : buffers) {
    for (uint64_t i = 0; i < kElements; ++i) {
      buffer[i] = normal(rng);
      reference[i] += buffer[i] / kWorld;
    }
  }
  InMemoryRing ring(kWorld);
  AllreduceOptions options;
  options.op = ReduceOp::kAverage;
  options.segment_bytes = 4096;
  std::vector<absl::Status> statuses;
  RunAllreduce(ring, kWorld, buffers, statuses, options, 7);
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r];
    ASSERT_EQ(buffers[r], buffers[0]) << "rank " << r << " differs from rank 0";
  }
  for (uint64_t i = 0; i < kElements; ++i) {
    ASSERT_NEAR(buffers[0][i], reference[i], 1e-5 * (1 + std::abs(reference[i])));
  }
}

TEST(AllreduceTest, ConsecutiveCollectivesOnTheSameRing) {
  constexpr int kWorld = 3;
  InMemoryRing ring(kWorld);
  for (uint64_t collective = 1; collective <= 5; ++collective) {
    const uint64_t elements = 10 * collective + 1;  // sizes may differ between collectives
    std::vector<std::vector<float>> buffers;
    for (int r = 0; r < kWorld; ++r) buffers.push_back(RankInput(r, elements));
    std::vector<absl::Status> statuses;
    AllreduceOptions options;
    options.segment_bytes = 8;
    RunAllreduce(ring, kWorld, buffers, statuses, options, collective);
    for (int r = 0; r < kWorld; ++r) {
      ASSERT_TRUE(statuses[r].ok()) << statuses[r];
      for (uint64_t i = 0; i < elements; ++i) ASSERT_EQ(buffers[r][i], ExpectedSum(kWorld, i));
    }
  }
}

// Forwards to a transport and keeps the header and payload size of every segment sent.
class RecordingTransport final : public RingTransport {
 public:
  explicit RecordingTransport(RingTransport& inner) : inner_(inner) {}
  const RingTopology& topology() const override { return inner_.topology(); }
  void BeginCollective(uint64_t collective) override { inner_.BeginCollective(collective); }
  absl::Status SendFilled(const SegmentHeader& header, size_t payload_bytes,
                          absl::FunctionRef<void(char*)> fill) override {
    sent.push_back({header, payload_bytes});
    return inner_.SendFilled(header, payload_bytes, fill);
  }
  absl::Status Forward(const SegmentHeader& header, const SegmentPayload& payload) override {
    sent.push_back({header, payload.size()});
    return inner_.Forward(header, payload);
  }
  absl::StatusOr<Segment> Receive(uint64_t collective, absl::Time deadline) override {
    return inner_.Receive(collective, deadline);
  }
  void AbandonCollective(const absl::Status& why) override { inner_.AbandonCollective(why); }

  std::vector<std::pair<SegmentHeader, size_t>> sent;

 private:
  RingTransport& inner_;
};

// A buffer past kRingPieceElements is reduced piece after piece, each its own collective on the
// wire and none larger than a piece, with exactly the cost model's bytes and the exact sum.
TEST(AllreduceTest, ABufferLargerThanAPieceIsReducedPieceByPiece) {
  constexpr int kWorld = 3;
  constexpr uint64_t kElements = 2 * kRingPieceElements + 7;  // three pieces
  constexpr uint64_t kCollective = 5;
  InMemoryRing ring(kWorld);
  std::vector<std::vector<float>> buffers;
  for (int r = 0; r < kWorld; ++r) buffers.push_back(RankInput(r, kElements));
  RecordingTransport recorded(ring.transport(0));
  std::vector<absl::Status> statuses(kWorld);
  RunRanks(kWorld, [&](int rank) {
    RingAllreduce allreduce(rank == 0 ? recorded : ring.transport(rank), LinkSendMetrics{});
    statuses[rank] = allreduce.Run(kCollective, absl::MakeSpan(buffers[rank]), AllreduceOptions());
  });
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r];
    for (uint64_t i = 0; i < kElements; ++i) {
      ASSERT_EQ(buffers[r][i], ExpectedSum(kWorld, i)) << "rank " << r << " element " << i;
    }
  }
  std::set<uint64_t> collectives;
  uint64_t last = 0;
  size_t bytes = 0;
  for (const auto& [header, payload] : recorded.sent) {
    EXPECT_GE(header.collective, last) << "pieces travel in order";
    last = header.collective;
    collectives.insert(header.collective);
    EXPECT_LE(header.total_elements, kRingPieceElements);
    bytes += payload;
  }
  EXPECT_EQ(collectives, (std::set<uint64_t>{RingWireCollective(kCollective, 0),
                                             RingWireCollective(kCollective, 1),
                                             RingWireCollective(kCollective, 2)}));
  EXPECT_EQ(bytes, RingBytesSentByRank(kElements, kWorld, 0, WireDtype::kFp32));
}

// The wire numbers a piece as the caller's collective shifted left 12 bits: a number that would
// not survive the shift is refused at once, before anything is sent.
TEST(AllreduceTest, ACollectiveNumberPastTheWiresRangeIsRefused) {
  constexpr int kWorld = 2;
  InMemoryRing ring(kWorld);
  std::vector<std::vector<float>> buffers = {RankInput(0, 10), RankInput(1, 10)};
  std::vector<absl::Status> statuses;
  RunAllreduce(ring, kWorld, buffers, statuses, AllreduceOptions(), uint64_t{1} << 52);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kInvalidArgument) << statuses[r];
  }
  RunAllreduce(ring, kWorld, buffers, statuses, AllreduceOptions(), (uint64_t{1} << 52) - 1);
  for (int r = 0; r < kWorld; ++r) EXPECT_TRUE(statuses[r].ok()) << statuses[r];
}

TEST(AllreduceTest, MismatchedLengthsFailOnEveryRankWithinTheDeadline) {
  constexpr int kWorld = 3;
  InMemoryRing ring(kWorld);
  std::vector<std::vector<float>> buffers = {RankInput(0, 30), RankInput(1, 31), RankInput(2, 30)};
  AllreduceOptions options;
  options.timeout = absl::Seconds(2);
  std::vector<absl::Status> statuses;
  const absl::Time start = absl::Now();
  RunAllreduce(ring, kWorld, buffers, statuses, options, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  for (int r = 0; r < kWorld; ++r) EXPECT_FALSE(statuses[r].ok()) << "rank " << r;

  // The same ring then serves a correct allreduce.
  buffers = {RankInput(0, 30), RankInput(1, 30), RankInput(2, 30)};
  RunAllreduce(ring, kWorld, buffers, statuses, options, 2);
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r];
    for (uint64_t i = 0; i < 30; ++i) ASSERT_EQ(buffers[r][i], ExpectedSum(kWorld, i));
  }
}

TEST(AllreduceTest, AMissingPeerFailsEveryOtherRankWithinItsDeadline) {
  constexpr int kWorld = 3;
  InMemoryRing ring(kWorld);
  AllreduceOptions options;
  options.timeout = absl::Milliseconds(300);
  std::vector<absl::Status> statuses(kWorld);
  const absl::Time start = absl::Now();
  RunRanks(kWorld - 1, [&](int rank) {  // rank 2 never joins
    std::vector<float> buffer = RankInput(rank, 100);
    RingAllreduce allreduce(ring.transport(rank), LinkSendMetrics{});
    statuses[rank] = allreduce.Run(1, absl::MakeSpan(buffer), options);
  });
  // Generous slack: this bounds a hang, it does not time the code.
  EXPECT_LT(absl::Now() - start, options.timeout + absl::Seconds(10));
  // Rank 0 waits on the missing rank itself; rank 1 may time out too, or first learn that
  // rank 0 gave up (its stream ended midway), whichever a loaded machine schedules first.
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded) << statuses[0];
  EXPECT_THAT(statuses[1].code(),
              ::testing::AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable))
      << statuses[1];
}

}  // namespace
}  // namespace ringside::ring
