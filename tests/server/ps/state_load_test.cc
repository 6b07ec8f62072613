// A Load stream's state hand-over as the reactor drives it (StateLoad), without gRPC: what it
// serves, and the loads it refuses (found by tests/fuzz/ps_load_fuzzer).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"
#include "server/ps/push_pull_shard.h"

namespace ringside::server {
namespace {

// SGD over [10, 14): 4 parameters and the step count; assigned in generation 3, so loads of
// generations up to 3 are checked against it.
ShardJob Job(uint64_t begin = 10, uint64_t size = 4) {
  ShardJob job;
  job.range = {begin, begin + size};
  job.generation = 3;
  return job;
}

proto::PsStateSegment Segment(uint64_t generation, uint32_t workers, uint64_t offset,
                              std::vector<float> values, const ShardJob& job = Job()) {
  proto::PsStateSegment segment;
  segment.set_generation(generation);
  segment.set_workers(workers);
  segment.set_step(3);
  segment.set_range_begin(job.range.begin);
  segment.set_range_elements(job.range.size());
  segment.set_state_elements(job.range.size() + 1);
  segment.set_offset(offset);
  segment.set_payload(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return segment;
}

TEST(StateLoadTest, ServesACompleteState) {
  ParameterShardService service(64);
  service.SetJob(Job());
  StateLoad load(service);
  ASSERT_TRUE(load.Add(Segment(2, 3, 0, {1, 2, 3})).ok());
  ASSERT_TRUE(load.Add(Segment(2, 3, 3, {4, 3})).ok());  // the step count last
  ASSERT_TRUE(load.Finish().ok());
  ASSERT_NE(service.current(), nullptr);
  ShardState& state = *service.current()->shard->steps();
  EXPECT_EQ(state.config().generation, 2u);
  EXPECT_EQ(state.config().workers, 3);
  EXPECT_EQ(state.current_step(), 3u);
  EXPECT_EQ(*state.parameters().value(), std::vector<float>({1, 2, 3, 4}));
}

// Each shard keeps per-worker state: 2^31 - 1 workers made it allocate 80 GiB.
TEST(StateLoadTest, RefusesWorkersBeyondTheLimitBeforeAllocating) {
  ParameterShardService service(64);
  service.SetJob(Job());
  StateLoad load(service);
  const absl::Status status = load.Add(Segment(2, 0x7fffffff, 0, {1, 2, 3, 4, 3}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("65536"), absl::string_view::npos) << status;
  EXPECT_TRUE(StateLoad(service).Add(Segment(2, kMaxLoadWorkers, 0, {1})).ok());
}

// FinishLoad cut the state by the job's range as it was at the end: a new assignment arriving
// during the load (a larger range) made it read past the state's end.
TEST(StateLoadTest, RefusesAStateTheJobNoLongerFits) {
  ParameterShardService service(64);
  service.SetJob(Job());
  StateLoad load(service);
  ASSERT_TRUE(load.Add(Segment(2, 1, 0, {1, 2, 3, 4, 3})).ok());
  service.SetJob(Job(10, 11));
  const absl::Status status = load.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(service.current(), nullptr) << "nothing served";
}

TEST(StateLoadTest, AnOlderGenerationFinishingLastIsRefused) {
  ParameterShardService service(64);
  service.SetJob(Job());
  StateLoad older(service), newer(service);
  ASSERT_TRUE(older.Add(Segment(2, 1, 0, {1, 2, 3, 4, 3})).ok());
  ASSERT_TRUE(newer.Add(Segment(3, 1, 0, {5, 6, 7, 8, 3})).ok());
  ASSERT_TRUE(newer.Finish().ok());
  EXPECT_EQ(older.Finish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(service.current()->shard->steps()->config().generation, 3u);
}

// A load is checked only against the assignment of its own generation or a later one: an older
// one may have another shard map. (The Load reactor waits for it first: load_order_test.cc.)
TEST(StateLoadTest, RefusesAGenerationTheShardHasNoAssignmentOf) {
  ParameterShardService service(64);
  service.SetJob(Job());
  const absl::Status status = StateLoad(service).Add(Segment(4, 1, 0, {1, 2, 3, 4, 3}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("generation 4"), absl::string_view::npos) << status;
  EXPECT_TRUE(service.AwaitAssignment(4, &service, [] {})) << "a Load of it would wait";
  EXPECT_FALSE(service.AwaitAssignment(3, &status, [] {})) << "generation 3 is assigned";
  EXPECT_TRUE(service.CancelAssignmentWait(&service));
  EXPECT_FALSE(service.CancelAssignmentWait(&service)) << "taken back once";
}

TEST(StateLoadTest, RefusesAnIncompleteOrChangedState) {
  ParameterShardService service(64);
  service.SetJob(Job());
  StateLoad incomplete(service);
  ASSERT_TRUE(incomplete.Add(Segment(2, 1, 0, {1, 2})).ok());
  EXPECT_EQ(incomplete.Finish().code(), absl::StatusCode::kInvalidArgument);
  StateLoad changed(service);
  ASSERT_TRUE(changed.Add(Segment(2, 1, 0, {1, 2})).ok());
  EXPECT_EQ(changed.Add(Segment(2, 2, 2, {3})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StateLoad(service).Finish().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(service.current(), nullptr);
}

// A keep (PsStateSegment.keep_served_state): the header of a load with no state.
proto::PsStateSegment Keep(uint64_t generation, uint32_t workers, const ShardJob& job = Job()) {
  proto::PsStateSegment segment = Segment(generation, workers, 0, {}, job);
  segment.clear_step();
  segment.set_keep_served_state(true);
  return segment;
}

// Under bounded staleness the shard holds the job's state: loaded in generation 2 with 3 workers
// at step 3, and trained on by one push.
ShardJob StaleJob(uint64_t generation) {
  ShardJob job = Job();
  job.generation = generation;
  job.staleness = 1;
  return job;
}

std::shared_ptr<const ShardGeneration> ServeStale(ParameterShardService& service) {
  service.SetJob(StaleJob(2));
  StateLoad load(service);
  EXPECT_TRUE(load.Add(Segment(2, 3, 0, {1, 2, 3, 4, 3})).ok());
  EXPECT_TRUE(load.Finish().ok());
  std::shared_ptr<const ShardGeneration> served = service.current();
  EXPECT_TRUE(served->shard->push_pull()->Push(0, 3, 0, {1, 1, 1, 1}).ok());
  EXPECT_TRUE(served->shard->push_pull()->AwaitSettled(1, absl::Seconds(20)).ok());
  return served;
}

// A regroup that keeps the shard map (a worker drained): the shard goes on with the very state it
// served, for the new generation and its workers, at the step it resumes at; the generation
// before is closed.
TEST(StateLoadTest, AKeepServesTheServedStateInTheNewGeneration) {
  ParameterShardService service(64);
  const std::shared_ptr<const ShardGeneration> before = ServeStale(service);
  const PushPullShard::Resumable served = before->shard->push_pull()->ResumeState();
  ASSERT_EQ(served.step, 4u);
  service.SetJob(StaleJob(3));
  StateLoad keep(service);
  ASSERT_TRUE(keep.Add(Keep(3, 2)).ok());
  ASSERT_TRUE(keep.Finish().ok());
  EXPECT_EQ(keep.kept_step(), served.step);
  const std::shared_ptr<const ShardGeneration> after = service.current();
  ASSERT_NE(after, before);
  EXPECT_EQ(after->shard->identity().generation, 3u);
  EXPECT_EQ(after->shard->identity().workers, 2);
  const PushPullShard::Resumable kept = after->shard->push_pull()->ResumeState();
  EXPECT_EQ(kept.step, served.step);
  EXPECT_EQ(kept.state, served.state);
  EXPECT_EQ(before->shard->push_pull()->Push(1, 3, 0, {1, 1, 1, 1}).code(),
            absl::StatusCode::kFailedPrecondition)
      << "the generation before is closed";
}

// A shard a step behind another (a worker cut off between its pushes to them) is kept at the
// later step, which its optimiser's step count takes too, as a whole read and load would set it.
TEST(StateLoadTest, AKeepAtALaterStepResumesThereWithTheSameValues) {
  ParameterShardService service(64);
  const PushPullShard::Resumable served = ServeStale(service)->shard->push_pull()->ResumeState();
  service.SetJob(StaleJob(3));
  proto::PsStateSegment later = Keep(3, 2);
  later.set_step(served.step + 2);
  StateLoad keep(service);
  ASSERT_TRUE(keep.Add(later).ok());
  ASSERT_TRUE(keep.Finish().ok());
  EXPECT_EQ(keep.kept_step(), served.step + 2);
  const PushPullShard::Resumable kept = service.current()->shard->push_pull()->ResumeState();
  EXPECT_EQ(kept.step, served.step + 2);
  std::vector<float> expected = served.state;
  expected[4] = static_cast<float>(served.step + 2);  // [4 parameters, steps]
  EXPECT_EQ(kept.state, expected);
}

TEST(StateLoadTest, AKeepIsOneSegmentWithNoState) {
  ParameterShardService service(64);
  ServeStale(service);
  service.SetJob(StaleJob(3));
  proto::PsStateSegment with_state = Keep(3, 2);
  with_state.set_payload(std::string(4, '\0'));
  EXPECT_EQ(StateLoad(service).Add(with_state).code(), absl::StatusCode::kInvalidArgument);
  StateLoad twice(service);
  ASSERT_TRUE(twice.Add(Keep(3, 2)).ok());
  EXPECT_EQ(twice.Add(Keep(3, 2)).code(), absl::StatusCode::kInvalidArgument);
  StateLoad after_state(service);
  ASSERT_TRUE(after_state.Add(Segment(3, 2, 0, {1, 2})).ok());
  EXPECT_EQ(after_state.Add(Keep(3, 2)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StateLoad(service).Add(Keep(4, 2)).code(), absl::StatusCode::kFailedPrecondition)
      << "no assignment of generation 4";
  EXPECT_EQ(service.current()->shard->identity().generation, 2u) << "nothing changed";
}

// Nothing to keep: no generation served, synchronous steps (every worker holds the state), or a
// range other than the one the shard map gives it now. The shard is loaded instead.
TEST(StateLoadTest, AShardKeepsOnlyAStateOfItsRange) {
  ParameterShardService empty(64);
  empty.SetJob(StaleJob(3));
  StateLoad nothing(empty);
  ASSERT_TRUE(nothing.Add(Keep(3, 2)).ok());
  EXPECT_EQ(nothing.Finish().code(), absl::StatusCode::kNotFound);

  ParameterShardService synchronous(64);
  synchronous.SetJob(Job());
  StateLoad load(synchronous);
  ASSERT_TRUE(load.Add(Segment(2, 3, 0, {1, 2, 3, 4, 3})).ok());
  ASSERT_TRUE(load.Finish().ok());
  StateLoad sync_keep(synchronous);
  ASSERT_TRUE(sync_keep.Add(Keep(3, 2)).ok());
  EXPECT_EQ(sync_keep.Finish().code(), absl::StatusCode::kNotFound);

  ParameterShardService moved(64);
  ServeStale(moved);
  ShardJob wider = StaleJob(3);
  wider.range = {10, 16};
  moved.SetJob(wider);
  StateLoad other_range(moved);
  ASSERT_TRUE(other_range.Add(Keep(3, 2, wider)).ok());
  const absl::Status status = other_range.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_NE(status.message().find("[10, 14)"), absl::string_view::npos) << status;
  EXPECT_EQ(moved.current()->shard->identity().generation, 2u) << "nothing changed";
}

}  // namespace
}  // namespace ringside::server
