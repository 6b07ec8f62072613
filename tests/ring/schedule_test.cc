#include "ring/schedule.h"

#include <set>

#include "gtest/gtest.h"

namespace ringside::ring {
namespace {

TEST(RingScheduleTest, NeighboursAgreeOnEveryStep) {
  for (int world = 2; world <= 9; ++world) {
    for (int rank = 0; rank < world; ++rank) {
      const RingSchedule sender(world, rank);
      const RingSchedule receiver(world, (rank + 1) % world);
      ASSERT_EQ(sender.steps(), 2 * (world - 1));
      for (int step = 0; step < sender.steps(); ++step) {
        EXPECT_EQ(sender.Step(step).send_chunk, receiver.Step(step).receive_chunk)
            << "world " << world << " rank " << rank << " step " << step;
      }
    }
  }
}

// Simulates contributions as sets of ranks: after scatter-reduce each rank's owned chunk holds
// every rank's contribution, and after allgather every chunk on every rank does.
TEST(RingScheduleTest, ScatterReduceThenAllgatherCompletesEveryChunk) {
  for (int world = 1; world <= 9; ++world) {
    std::vector<std::vector<std::set<int>>> held(world, std::vector<std::set<int>>(world));
    for (int r = 0; r < world; ++r) {
      for (int c = 0; c < world; ++c) held[r][c] = {r};
    }
    const int steps = 2 * (world - 1);
    for (int step = 0; step < steps; ++step) {
      auto before = held;
      for (int r = 0; r < world; ++r) {
        const RingStep plan = RingSchedule(world, r).Step(step);
        const int left = (r + world - 1) % world;
        const auto& incoming = before[left][RingSchedule(world, left).Step(step).send_chunk];
        auto& mine = held[r][plan.receive_chunk];
        if (plan.reduce) {
          mine.insert(incoming.begin(), incoming.end());
        } else {
          mine = incoming;
        }
      }
      if (step == world - 2) {
        for (int r = 0; r < world; ++r) {
          EXPECT_EQ(held[r][RingSchedule(world, r).owned_chunk()].size(),
                    static_cast<size_t>(world));
        }
      }
    }
    for (int r = 0; r < world; ++r) {
      for (int c = 0; c < world; ++c) {
        EXPECT_EQ(held[r][c].size(), static_cast<size_t>(world))
            << "world " << world << " rank " << r << " chunk " << c;
      }
    }
  }
}

TEST(RingScheduleTest, SegmentsInChunk) {
  EXPECT_EQ(SegmentsInChunk(0, 4), 1u);
  EXPECT_EQ(SegmentsInChunk(4, 4), 1u);
  EXPECT_EQ(SegmentsInChunk(5, 4), 2u);
}

TEST(RingTopologyTest, Validates) {
  EXPECT_TRUE(ValidateTopology({0, 4, 3}).ok());
  EXPECT_EQ(ValidateTopology({0, 4, 4}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateTopology({0, 0, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((RingTopology{0, 4, 0}.left()), 3);
  EXPECT_EQ((RingTopology{0, 4, 3}.right()), 0);
}

}  // namespace
}  // namespace ringside::ring
