#include "worker/regroup_plan.h"

namespace ringside::worker {

StatePlan PlanState(const Census& census, int world, uint64_t checkpoint_step,
                    bool replay_allowed) {
  StatePlan plan;
  // The first of the most advanced members; with the replay, the first of them that still holds
  // its last sum (one that began its next step's compute before it learned of the regroup
  // overwrote it; another may not have).
  const auto holds_sum = [&](int member) {
    return replay_allowed && census.at(kLastSumRow, member) != 0.0f;
  };
  const auto finite = [&](int member) { return census.at(kNonFiniteRow, member) == 0.0f; };
  int most = -1;
  for (int member = 0; member < world; ++member) {
    if (census.at(kOnShardsRow, member) != 0.0f) plan.from_shards = true;
    if (!finite(member)) continue;
    const float completed = census.at(kCompletedRow, member);
    if (most < 0 || completed > census.at(kCompletedRow, most) ||
        (completed == census.at(kCompletedRow, most) && holds_sum(member) && !holds_sum(most))) {
      most = member;
    }
  }
  if (most < 0 && !plan.from_shards) {  // no member's state may be adopted
    plan.from_checkpoint = checkpoint_step > 0;
    plan.from_initial = !plan.from_checkpoint;
    return plan;
  }
  if (most < 0) most = 0;  // the shards' state (rank 0 reads it, and checks it)
  plan.most = census.at(kCompletedRow, most);
  plan.from_checkpoint = !plan.from_shards && checkpoint_step > static_cast<uint64_t>(plan.most);
  plan.source = plan.from_checkpoint || plan.from_shards ? 0 : most;
  bool one_behind = false;
  plan.level = true;
  for (int member = 0; member < world; ++member) {
    if (plan.SameAsSource(census, member)) continue;
    plan.level = false;
    if (census.at(kCompletedRow, member) + 1.0f == plan.most) {
      one_behind = true;
    } else {
      plan.left_after_replay = true;
    }
  }
  plan.replay = one_behind && !plan.from_shards && !plan.from_checkpoint && holds_sum(plan.source);
  return plan;
}

}  // namespace ringside::worker
