// The regroup's plan from its census (worker/regroup_plan.h), member by member: who is the
// source, who keeps its own state, who replays the last step from the source's sum and who
// receives the whole state (nobody, when the job is level), for a level job, members one step
// behind, a joiner beside them, a source that no longer holds its sum, the shards' state and a
// checkpoint.
#include "worker/regroup_plan.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

struct MemberView {
  int64_t completed = 0;
  bool holds_last_sum = true;
  uint64_t digest = 0xabcd;
  bool on_shards = false;
  bool non_finite = false;  // its state holds a NaN or an infinity
};

Census CensusOf(const std::vector<MemberView>& members) {
  Census census(static_cast<int>(members.size()));
  for (size_t m = 0; m < members.size(); ++m) {
    const int member = static_cast<int>(m);
    census.at(kCompletedRow, member) = static_cast<float>(members[m].completed);
    census.at(kOnShardsRow, member) = members[m].on_shards ? 1.0f : 0.0f;
    census.at(kLastSumRow, member) = members[m].holds_last_sum ? 1.0f : 0.0f;
    census.at(kNonFiniteRow, member) = members[m].non_finite ? 1.0f : 0.0f;
    census.SetDigest(member, members[m].digest);
  }
  return census;
}

TEST(RegroupPlanTest, ALevelJobKeepsEveryonesStateAndReplaysNothing) {
  const Census census = CensusOf({{7}, {7}, {7}});
  const StatePlan plan = PlanState(census, 3, 0, true);
  EXPECT_EQ(plan.source, 0);
  EXPECT_FALSE(plan.replay);
  EXPECT_FALSE(plan.left_after_replay);
  EXPECT_TRUE(plan.level) << "nothing to hand over";
  for (int member = 0; member < 3; ++member) EXPECT_TRUE(plan.SameAsSource(census, member));
}

TEST(RegroupPlanTest, MembersOneStepBehindReplayFromTheFirstMostAdvancedThatHoldsItsSum) {
  // Member 0 began its next step's compute (its sum is gone); member 2 still holds its own.
  const Census census = CensusOf({{7, false}, {6, true, 0x1111}, {7, true}});
  const StatePlan plan = PlanState(census, 3, 0, true);
  EXPECT_EQ(plan.source, 2);
  EXPECT_TRUE(plan.replay);
  EXPECT_FALSE(plan.left_after_replay);
  EXPECT_FALSE(plan.level);
  EXPECT_TRUE(plan.Replays(census, 1));
  EXPECT_FALSE(plan.Replays(census, 0)) << "level with the source";
  EXPECT_FALSE(plan.Replays(census, 2)) << "the source";
}

TEST(RegroupPlanTest, AJoinerBesideAMemberOneStepBehindGetsTheStateAfterTheReplay) {
  // Member 3 joined with the initial parameters; member 1's last step was superseded.
  const Census census = CensusOf({{125}, {124, true, 0x1111}, {125}, {0, false, 0x2222}});
  const StatePlan plan = PlanState(census, 4, 0, true);
  EXPECT_EQ(plan.source, 0);
  EXPECT_TRUE(plan.replay) << "the joiner does not stop member 1 replaying";
  EXPECT_TRUE(plan.left_after_replay) << "the joiner still needs the state";
  EXPECT_TRUE(plan.Replays(census, 1));
  EXPECT_FALSE(plan.Replays(census, 3)) << "two or more steps behind";
  EXPECT_FALSE(plan.SameAsSource(census, 3));
}

TEST(RegroupPlanTest, WithNoSumToReplayEveryMemberBehindReceivesTheState) {
  const Census census = CensusOf({{5, false}, {4, true, 0x1111}, {0, false, 0x2222}});
  StatePlan plan = PlanState(census, 3, 0, true);
  EXPECT_EQ(plan.source, 0);
  EXPECT_FALSE(plan.replay) << "the only most advanced member overwrote its sum";
  EXPECT_FALSE(plan.Replays(census, 1));
  plan = PlanState(CensusOf({{5}, {4, true, 0x1111}}), 2, 0, /*replay_allowed=*/false);
  EXPECT_FALSE(plan.replay) << "replay turned off";
  EXPECT_FALSE(plan.level) << "member 1 receives the state";
}

TEST(RegroupPlanTest, ALevelMemberWithAnotherDigestReceivesTheState) {
  const Census census = CensusOf({{9}, {9, true, 0x9999}, {8, true, 0x1111}});
  const StatePlan plan = PlanState(census, 3, 0, true);
  EXPECT_TRUE(plan.replay);
  EXPECT_TRUE(plan.Replays(census, 2));
  EXPECT_FALSE(plan.Replays(census, 1)) << "not behind: the replay cannot mend it";
  EXPECT_TRUE(plan.left_after_replay);
  EXPECT_FALSE(plan.level) << "the same steps, not the same parameters";
}

TEST(RegroupPlanTest, TheShardsStateOrANewerCheckpointIsTheSourceAndNothingIsReplayed) {
  StatePlan plan = PlanState(CensusOf({{5, true, 0xabcd, true}, {4}}), 2, 0, true);
  EXPECT_TRUE(plan.from_shards);
  EXPECT_FALSE(plan.replay);
  EXPECT_EQ(plan.source, 0);
  EXPECT_FALSE(plan.SameAsSource(CensusOf({{5}, {4}}), 0)) << "everyone adopts the shards'";
  plan = PlanState(CensusOf({{5, true, 0xabcd, true}, {5, true, 0xabcd, true}}), 2, 0, true);
  EXPECT_FALSE(plan.level) << "level members still adopt the shards' state";

  plan = PlanState(CensusOf({{0}, {0}}), 2, /*checkpoint_step=*/40, true);
  EXPECT_TRUE(plan.from_checkpoint);
  EXPECT_FALSE(plan.replay);
  EXPECT_FALSE(plan.level) << "level members at step 0 adopt the checkpoint";
  plan = PlanState(CensusOf({{40}, {39, true, 0x1111}}), 2, /*checkpoint_step=*/40, true);
  EXPECT_FALSE(plan.from_checkpoint) << "a member as far as the checkpoint is the source";
  EXPECT_TRUE(plan.replay);
}

TEST(RegroupPlanTest, AMemberWhoseStateIsNotFiniteIsNeverTheSource) {
  // Member 1 is the most advanced, but its state holds a NaN: the next most advanced finite one
  // is the source, and member 1 receives its state like a member behind.
  const Census census =
      CensusOf({{7}, {9, true, 0x1111, false, /*non_finite=*/true}, {8, true, 0x2222}});
  const StatePlan plan = PlanState(census, 3, /*checkpoint_step=*/0, true);
  EXPECT_EQ(plan.source, 2);
  EXPECT_EQ(plan.most, 8.0f);
  EXPECT_FALSE(plan.from_checkpoint || plan.from_initial || plan.level);
  EXPECT_FALSE(plan.SameAsSource(census, 1));
  EXPECT_FALSE(plan.Replays(census, 1)) << "ahead of the source: it receives the whole state";
}

TEST(RegroupPlanTest, WhenNoMembersStateIsFiniteTheNewestCheckpointOrTheInitialStateIsTaken) {
  const Census census = CensusOf({{7, true, 0x1, false, true}, {7, true, 0x1, false, true}});
  const StatePlan checkpoint = PlanState(census, 2, /*checkpoint_step=*/5, true);
  EXPECT_TRUE(checkpoint.from_checkpoint) << "an older checkpoint, but a finite one";
  EXPECT_FALSE(checkpoint.from_initial || checkpoint.level || checkpoint.replay);
  EXPECT_FALSE(checkpoint.SameAsSource(census, 0));
  const StatePlan initial = PlanState(census, 2, /*checkpoint_step=*/0, true);
  EXPECT_TRUE(initial.from_initial);
  EXPECT_FALSE(initial.from_checkpoint || initial.level || initial.replay);
}

}  // namespace
}  // namespace ringside::worker
