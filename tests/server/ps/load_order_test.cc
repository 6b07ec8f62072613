// A Load against an elastic shard that has not had its assignment of the load's generation yet,
// over real gRPC in one process (issue 23: a one-worker ps job sat at step 0 for its whole
// --regroup_timeout, then exited 1). Worker and shard learn of a generation on separate watch
// streams, in no set order, and with one worker the census and the state hand-over take no
// time, so rank 0's Load could reach the shard first. The shard refused it, the regroup failed,
// and no new generation ever came to cure it. The ordering is forced here: each Load is made to
// arrive first, and the shard's assignment is delivered only once the shard says the Load waits
// for it (the load-wait hook), or never.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_util.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"
#include "server/ps/shard_transfer.h"
#include "tests/support/ps_test_hooks.h"

namespace ringside::server {
namespace {

constexpr uint64_t kParameters = 300;
const OptimizerConfig kSgd{OptimizerKind::kSgd, 0.5f};

// The job's state after `step` steps: `elements` parameters of `value` (the range of shard 0
// of a map of that many parameters) and SGD's state, as a worker holds it.
struct HeldState {
  uint64_t step = 0;
  std::vector<float> parameters;
  std::shared_ptr<Optimizer> optimizer;
  server::JobStateView view() const { return {step, parameters, optimizer.get()}; }
};

HeldState StateOf(uint64_t step, float value, uint64_t elements = kParameters) {
  HeldState state{step, std::vector<float>(elements, value), nullptr};
  auto optimizer = Optimizer::Create(kSgd, elements);
  EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  if (!optimizer.ok()) return state;
  state.optimizer = std::make_shared<Optimizer>(*std::move(optimizer));
  const std::vector<float> steps = {static_cast<float>(step)};  // [steps] for SGD: it agrees
  EXPECT_TRUE(state.optimizer->ImportState(steps).ok());
  return state;
}

ShardJob JobOf(uint64_t generation, ElementRange range = {0, kParameters}) {
  return ShardJob{0, range, kSgd, generation};
}

// One elastic shard on loopback, before its first assignment, and the Loads sent to it, each
// on a thread of its own; the hook tells which generations a Load began to wait for.
class LoadOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<ParameterShardService>(/*segment_bytes=*/256);
    PsTestHooks::SetLoadWaitHook(*service_, [this](uint64_t generation) {
      absl::MutexLock lock(&mu_);
      waits_.push_back(generation);
    });
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_.port);
  }

  void TearDown() override {
    for (std::thread& load : loads_) load.join();
  }

  // Rank 0's Load of `state` for `generation` (server/ps/shard_transfer.h, as the trainer sends
  // it), started now on a thread; its status lands in statuses_[i], i the index returned.
  size_t StartLoad(uint64_t generation, const HeldState& state) {
    absl::MutexLock lock(&mu_);
    const size_t index = statuses_.size();
    statuses_.emplace_back();
    server::ShardTransferOptions options;
    options.shards = {address_};
    options.segment_bytes = 256;
    options.timeout = absl::Seconds(30);  // only a hang's limit: every case ends by an event
    loads_.emplace_back([this, options, generation, state, index] {
      const absl::Status status =
          server::LoadShards(options, generation, /*workers=*/1, state.view());
      absl::MutexLock lock(&mu_);
      statuses_[index] = status;
    });
    return index;
  }

  // Until the shard says a Load waits for `generation`'s assignment, or Load `index` ended;
  // true for the first.
  bool WaitsFor(uint64_t generation, size_t index) {
    absl::MutexLock lock(&mu_);
    auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return std::find(waits_.begin(), waits_.end(), generation) != waits_.end() ||
             statuses_[index].has_value();
    };
    mu_.Await(absl::Condition(&seen));
    return !statuses_[index].has_value();
  }

  absl::Status Ended(size_t index) {
    absl::MutexLock lock(&mu_);
    auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return statuses_[index].has_value(); };
    mu_.Await(absl::Condition(&ended));
    return *statuses_[index];
  }

  std::unique_ptr<ParameterShardService> service_;
  StartedServer server_;
  std::string address_;
  std::vector<std::thread> loads_;
  absl::Mutex mu_;
  std::vector<uint64_t> waits_ ABSL_GUARDED_BY(mu_);
  std::vector<std::optional<absl::Status>> statuses_ ABSL_GUARDED_BY(mu_);
};

// The stall's interleaving: the worker's Load of generation 1 first, the shard's first
// assignment after it. It used to be refused at once ("this shard has no assignment from the
// controller yet").
TEST_F(LoadOrderTest, ALoadBeforeTheShardsFirstAssignmentWaitsForItAndIsServed) {
  const size_t load = StartLoad(1, StateOf(0, 2.0f));
  ASSERT_TRUE(WaitsFor(1, load)) << "the Load ended before the shard had its assignment: "
                                 << Ended(load);
  EXPECT_EQ(service_->current(), nullptr) << "nothing is served before the assignment";
  service_->SetJob(JobOf(1));
  ASSERT_TRUE(Ended(load).ok()) << Ended(load);
  ASSERT_NE(service_->current(), nullptr);
  ShardState& state = *service_->current()->shard->steps();
  EXPECT_EQ(state.config().generation, 1u);
  EXPECT_EQ(state.current_step(), 0u);
  EXPECT_EQ(*state.parameters().value(), std::vector<float>(kParameters, 2.0f));
  EXPECT_EQ(service_->loads_awaiting_assignment(), 0u);
}

// A generation whose shard map changed (a second shard joined): the Load of the new, smaller
// range must wait for the new assignment, not be checked against the old one, which it does not
// fit (INVALID_ARGUMENT, the same stall).
TEST_F(LoadOrderTest, ALoadOfANewerGenerationWaitsForThatGenerationsAssignment) {
  service_->SetJob(JobOf(1));
  ASSERT_TRUE(Ended(StartLoad(1, StateOf(0, 2.0f))).ok()) << "generation 1 is assigned";
  const ElementRange half = EvenRanges(kParameters, 2)[0];
  const size_t load = StartLoad(2, StateOf(4, 3.0f, half.size()));
  ASSERT_TRUE(WaitsFor(2, load)) << "the Load of generation 2 was checked against generation "
                                    "1's shard map: "
                                 << Ended(load);
  EXPECT_EQ(service_->current()->shard->steps()->config().generation, 1u) << "still generation 1";
  service_->SetJob(JobOf(2, half));
  ASSERT_TRUE(Ended(load).ok()) << Ended(load);
  ShardState& state = *service_->current()->shard->steps();
  EXPECT_EQ(state.config().generation, 2u);
  EXPECT_EQ(state.current_step(), 4u);
  EXPECT_EQ(*state.parameters().value(), std::vector<float>(half.size(), 3.0f));
}

// An assignment that skips the load's generation (the watch keeps only the newest) releases it
// too, and the Load is checked against that newer assignment.
TEST_F(LoadOrderTest, ALaterAssignmentReleasesTheLoadToBeCheckedAgainstIt) {
  const size_t fits = StartLoad(3, StateOf(1, 5.0f));
  ASSERT_TRUE(WaitsFor(3, fits)) << Ended(fits);
  service_->SetJob(JobOf(2));
  EXPECT_EQ(service_->loads_awaiting_assignment(), 1u) << "generation 2 is not generation 3";
  service_->SetJob(JobOf(4));
  ASSERT_TRUE(Ended(fits).ok()) << Ended(fits);
  EXPECT_EQ(service_->current()->shard->steps()->config().generation, 3u);

  const size_t misfit = StartLoad(6, StateOf(1, 5.0f, kParameters / 2));
  ASSERT_TRUE(WaitsFor(6, misfit)) << Ended(misfit);
  service_->SetJob(JobOf(7));  // one shard again: the Load's half range does not fit
  EXPECT_EQ(Ended(misfit).code(), absl::StatusCode::kInvalidArgument) << Ended(misfit);
  EXPECT_EQ(service_->current()->shard->steps()->config().generation, 3u) << "nothing changed";
}

// A waiting Load that its worker gives up (a newer generation, its deadline) leaves no wait
// behind, and an assignment arriving after it changes nothing.
TEST_F(LoadOrderTest, AWaitingLoadCancelledByItsWorkerChangesNothing) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stub = proto::ParameterShard::NewStub(MakeChannel(address_, TransportSecurity()));
  proto::PsLoadReply reply;
  auto writer = stub->Load(&context, &reply);
  proto::PsStateSegment segment;
  segment.set_generation(5);
  segment.set_workers(1);
  segment.set_range_elements(kParameters);
  segment.set_state_elements(kParameters + 1);
  segment.set_payload(std::string(16, '\0'));
  ASSERT_TRUE(writer->Write(segment));
  {
    absl::MutexLock lock(&mu_);
    auto waiting = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !waits_.empty(); };
    // The limit only turns a Load that never waits (it was refused) into a failure, not a hang.
    ASSERT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&waiting), absl::Seconds(30)))
        << "the Load did not wait for the shard's assignment: " << writer->Finish().error_message();
  }
  context.TryCancel();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  service_->SetJob(JobOf(5));  // resumes the Load, or finds its wait taken back: either way
  EXPECT_EQ(service_->current(), nullptr) << "a cancelled Load stored something";
  EXPECT_EQ(service_->loads_awaiting_assignment(), 0u);
}

// A Load still waiting when the shard stops ends then: the server's shutdown does not hang on it.
TEST_F(LoadOrderTest, ALoadWaitingWhenTheShardStopsEnds) {
  const size_t load = StartLoad(1, StateOf(0, 2.0f));
  ASSERT_TRUE(WaitsFor(1, load)) << Ended(load);
  server_.Shutdown(absl::ZeroDuration());
  EXPECT_FALSE(Ended(load).ok());
  EXPECT_EQ(service_->loads_awaiting_assignment(), 0u);
  EXPECT_EQ(service_->current(), nullptr);
}

// A static shard (a generation of its own, never an assignment) refuses a Load at once rather
// than waiting for an assignment that will never come.
TEST(StaticShardLoadTest, IsRefusedAtOnce) {
  ParameterShardService service(256);
  auto state = ShardState::Create(ShardConfig{1, 1, 0}, std::vector<float>(kParameters), kSgd);
  ASSERT_TRUE(state.ok()) << state.status();
  service.Serve(ShardGeneration{Shard::Synchronous(*std::move(state)), ShardLinkMetrics{}});
  bool waited = false;
  PsTestHooks::SetLoadWaitHook(service, [&waited](uint64_t) { waited = true; });
  auto server = StartServer("127.0.0.1:0", {&service}, TransportSecurity());
  ASSERT_TRUE(server.ok()) << server.status();
  server::ShardTransferOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", server->port)};
  const absl::Status status = server::LoadShards(options, 2, 1, StateOf(0, 1.0f).view());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_FALSE(waited);
}

}  // namespace
}  // namespace ringside::server
