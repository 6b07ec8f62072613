// A Load stream's state hand-over as the reactor drives it (StateLoad), without gRPC: what it
// serves, and the loads it refuses (found by tests/fuzz/ps_load_fuzzer).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/ps/ps_service.h"

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

}  // namespace
}  // namespace ringside::server
