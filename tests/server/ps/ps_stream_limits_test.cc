// Issue 51, the shard's streams (server/ps/ps_service.h, common/stream_limits.h), over real gRPC
// in one process: a stream is authenticated from its call's metadata before anything of it is
// read, holds no generation until its first message, is bounded per worker and in all, and ends
// when it stays silent; a Load that supersedes a push-pull generation closes that generation's
// state.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "server/ps/ps_service.h"

namespace ringside::server {
namespace {

constexpr uint64_t kRange = 64;
const OptimizerConfig kSgd{OptimizerKind::kSgd, 1.0f};

// Waits for something the service makes observable as it happens on gRPC's threads (a call
// start admitted or refused). The bound only guards against a hang; it never paces the test.
bool Eventually(const std::function<bool()>& event) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (!event()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

class PsStreamLimitsTest : public ::testing::Test {
 protected:
  // An elastic shard (its credential set) unless `credential` is empty.
  void Start(StreamLimits limits, const std::string& credential = Hmac("limits-test", "ps-0")) {
    credential_ = credential;
    service_ = std::make_unique<ParameterShardService>(256, ShardMetricsFactory{}, limits);
    if (!credential.empty()) service_->SetMemberCredential(credential);
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = proto::ParameterShard::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server_.port), TransportSecurity()));
  }

  // Serves a synchronous generation of two workers; returns its state.
  std::shared_ptr<ShardState> ServeGeneration(uint64_t generation) {
    auto state =
        ShardState::Create(ShardConfig{generation, 2, 0}, std::vector<float>(kRange, 1.0f), kSgd);
    EXPECT_TRUE(state.ok()) << state.status();
    std::shared_ptr<ShardState> shared = *std::move(state);
    service_->Serve(ShardGeneration{Shard::Synchronous(shared), ShardLinkMetrics{}});
    return shared;
  }

  // A Step call, opened and left silent: nothing is written.
  struct OpenStep {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<grpc::ClientReaderWriter<proto::PsPush, proto::PsRangeValues>> stream;
  };
  OpenStep Open(const LinkClaim& claim) {
    OpenStep open;
    SetDeadline(*open.context, absl::Seconds(60));
    AddLinkClaim(*open.context, claim);
    open.stream = stub_->Step(open.context.get());
    return open;
  }

  static proto::PsPush Segment(uint64_t generation, uint32_t worker, uint64_t count) {
    proto::PsPush push;
    push.set_generation(generation);
    push.set_worker_rank(worker);
    push.set_step(0);
    push.set_offset(0);
    push.set_range_elements(kRange);
    push.set_payload(std::string(count * sizeof(float), '\0'));
    return push;
  }

  std::string credential_;
  std::unique_ptr<ParameterShardService> service_;
  StartedServer server_;
  std::unique_ptr<proto::ParameterShard::Stub> stub_;
};

// Issue 51, point 1: 300 streams that never send a message, 75 in each of four generations (a
// third with no key, a third with a forged one, a third with a worker's real key, four in five
// of them worker 0's). The strangers are refused when their calls start (no message was ever
// written, so the key cannot have been read from one); the real ones are held up to the bounds
// (8 per worker, 12 in all) and beyond either refused with RESOURCE_EXHAUSTED; and no held stream
// pins a generation: every superseded generation's state is gone once the next one is served.
TEST_F(PsStreamLimitsTest, IdleStreamsAcrossGenerationsHoldNoGenerationAndAreBounded) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Minutes(10), absl::Minutes(10), 8, 12}));
  std::vector<OpenStep> held;
  std::vector<std::weak_ptr<ShardState>> generations;
  int refused_for_key = 0, refused_for_bound = 0, refused_per_peer = 0;
  for (uint64_t generation = 10; generation < 14; ++generation) {
    generations.push_back(ServeGeneration(generation));
    for (int i = 0; i < 75; ++i) {
      const int rank = (i / 3) % 5 == 4 ? 1 : 0;
      LinkClaim claim{ShardStepKey(credential_, generation, rank), generation, rank, true};
      if (i % 3 == 0) claim.key.clear();
      if (i % 3 == 1) claim.key = ShardStepKey(credential_, generation, 1 - rank);
      const uint64_t answered = service_->streams_held() + service_->streams_refused();
      OpenStep open = Open(claim);
      if (i % 3 != 2) {
        const grpc::Status status = open.stream->Finish();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
            << status.error_message();
        ++refused_for_key;
        continue;
      }
      ASSERT_TRUE(Eventually(
          [&] { return service_->streams_held() + service_->streams_refused() > answered; }));
      if (static_cast<size_t>(service_->streams_held()) == held.size()) {  // not admitted
        const grpc::Status status = open.stream->Finish();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
            << status.error_message();
        ++refused_for_bound;
        if (status.error_message().find("from this peer") != std::string::npos) {
          ++refused_per_peer;
        }
        continue;
      }
      held.push_back(std::move(open));
    }
  }
  EXPECT_EQ(refused_for_key, 200);
  EXPECT_EQ(held.size(), 12u) << "the bounds: 8 per worker, 12 in all";
  EXPECT_EQ(refused_for_bound, 88);
  EXPECT_GT(refused_per_peer, 0) << "worker 0 beyond its 8";
  EXPECT_LT(refused_per_peer, 88) << "everyone beyond the 12";
  EXPECT_EQ(service_->streams_held(), 12);
  for (size_t g = 0; g + 1 < generations.size(); ++g) {
    EXPECT_TRUE(generations[g].expired()) << "generation " << 10 + g << " is still held";
  }
  EXPECT_FALSE(generations.back().expired());

  for (OpenStep& open : held) open.context->TryCancel();
  for (OpenStep& open : held) {
    EXPECT_EQ(open.stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

// A static shard (no credential) bounds its streams by the caller's address.
TEST_F(PsStreamLimitsTest, AStaticShardBoundsTheStreamsOfOnePeer) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Minutes(10), absl::Minutes(10), 2, 20}, ""));
  ServeGeneration(1);
  std::vector<OpenStep> held;
  for (int i = 0; i < 2; ++i) held.push_back(Open(LinkClaim{"", 1, i, true}));
  ASSERT_TRUE(Eventually([&] { return service_->streams_held() == 2; }));
  OpenStep third = Open(LinkClaim{"", 1, 0, true});
  EXPECT_EQ(third.stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  for (OpenStep& open : held) open.context->TryCancel();
  for (OpenStep& open : held) open.stream->Finish();
}

// A key for one worker on a call whose first message is another worker's is refused: the
// message's fields must agree with what the metadata claimed.
TEST_F(PsStreamLimitsTest, AMessageMustAgreeWithItsCallsClaim) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{}));
  std::shared_ptr<ShardState> state = ServeGeneration(3);
  OpenStep open = Open(LinkClaim{ShardStepKey(credential_, 3, 0), 3, 0, true});
  open.stream->Write(Segment(3, /*worker=*/1, kRange));
  open.stream->WritesDone();
  const grpc::Status status = open.stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_EQ(*state->parameters().value(), std::vector<float>(kRange, 1.0f));
}

// Point 1's deadlines: a stream that sends nothing ends at its first-message deadline with
// DEADLINE_EXCEEDED from the shard (the client's own deadline is a minute).
TEST_F(PsStreamLimitsTest, AStreamThatSendsNothingEndsAtItsFirstMessageDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Milliseconds(1), absl::Minutes(10), 64, 1024}));
  ServeGeneration(3);
  OpenStep silent = Open(LinkClaim{ShardStepKey(credential_, 3, 0), 3, 0, true});
  const grpc::Status status = silent.stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status.error_message().find("first-message deadline"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(service_->streams_expired(), 1u);
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

// ... and one that stops midway ends at its idle limit; the half-pushed share is abandoned,
// nothing applied.
TEST_F(PsStreamLimitsTest, AStreamThatStopsMidwayEndsAtItsIdleLimit) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Minutes(10), absl::Milliseconds(1), 64, 1024}));
  std::shared_ptr<ShardState> state = ServeGeneration(3);
  OpenStep midway = Open(LinkClaim{ShardStepKey(credential_, 3, 0), 3, 0, true});
  ASSERT_TRUE(midway.stream->Write(Segment(3, 0, kRange / 2)));
  const grpc::Status status = midway.stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status.error_message().find("idle limit"), std::string::npos) << status.error_message();
  EXPECT_EQ(*state->parameters().value(), std::vector<float>(kRange, 1.0f));
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

// A Load is watched as the push streams are: one that sends nothing ends at its first-message
// deadline, and one that stops after its first segment at its idle limit; neither loads anything.
// The shard cancels the call (its worker sees CANCELLED) and counts it as expired.
TEST_F(PsStreamLimitsTest, ASilentLoadEndsAtItsFirstMessageDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Milliseconds(1), absl::Minutes(10), 64, 1024}));
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(60));
  AddLinkClaim(context, LinkClaim{ShardLoadKey(credential_, 3), 3, -1, true});
  proto::PsLoadReply reply;
  std::unique_ptr<grpc::ClientWriter<proto::PsStateSegment>> load = stub_->Load(&context, &reply);
  const grpc::Status status = load->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_EQ(service_->streams_expired(), 1u);
  EXPECT_EQ(service_->current(), nullptr);
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

TEST_F(PsStreamLimitsTest, ALoadThatStopsMidwayEndsAtItsIdleLimit) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Minutes(10), absl::Milliseconds(1), 64, 1024}));
  service_->SetJob(ShardJob{0, ElementRange{0, kRange}, kSgd, 3});
  const uint64_t state_elements = kRange + Optimizer::StateSize(OptimizerKind::kSgd, kRange);
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(60));
  AddLinkClaim(context, LinkClaim{ShardLoadKey(credential_, 3), 3, -1, true});
  proto::PsLoadReply reply;
  std::unique_ptr<grpc::ClientWriter<proto::PsStateSegment>> load = stub_->Load(&context, &reply);
  proto::PsStateSegment first;
  first.set_generation(3);
  first.set_workers(2);
  first.set_range_elements(kRange);
  first.set_state_elements(state_elements);
  first.set_payload(std::string(state_elements / 2 * sizeof(float), '\0'));
  ASSERT_TRUE(load->Write(first));
  const grpc::Status status = load->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_EQ(service_->streams_expired(), 1u);
  EXPECT_EQ(service_->current(), nullptr) << "half a Load was served";
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

// Point 5: a Load that replaces a push-pull generation closes that generation's PushPullShard, so a
// pull waiting on it is answered (ABORTED) instead of waiting for ever.
TEST_F(PsStreamLimitsTest, ALoadClosesTheSupersededPushPullGeneration) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{}, ""));
  auto stale = PushPullShard::Create(PushPullShardConfig{4, 2, 0, /*staleness=*/1},
                                     std::vector<float>(kRange, 1.0f), {}, kSgd);
  ASSERT_TRUE(stale.ok()) << stale.status();
  std::shared_ptr<PushPullShard> old = *std::move(stale);
  service_->Serve(ShardGeneration{Shard::PushPull(old), {}});
  // Worker 0 may not start step 3 before worker 1 has completed a step: the pull waits.
  absl::Notification answered;
  absl::Status pull;
  old->WhenMayStart(0, 3, [&](absl::StatusOr<PushPullRead> read) {
    pull = read.status();
    answered.Notify();
  });
  ASSERT_FALSE(answered.HasBeenNotified());

  service_->SetJob(ShardJob{0, ElementRange{0, kRange}, kSgd, 5, /*backup_workers=*/0,
                            /*staleness=*/1});
  const uint64_t state_elements = kRange + Optimizer::StateSize(OptimizerKind::kSgd, kRange);
  proto::PsStateSegment segment;
  segment.set_generation(5);
  segment.set_workers(2);
  segment.set_range_elements(kRange);
  segment.set_state_elements(state_elements);
  segment.set_payload(std::string(state_elements * sizeof(float), '\0'));
  StateLoad load(*service_);
  ASSERT_TRUE(load.Add(segment).ok());
  ASSERT_TRUE(load.Finish().ok());
  ASSERT_NE(service_->current()->shard->push_pull(), old.get());

  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(20)))
      << "the superseded generation's push-pull state was left open";
  EXPECT_EQ(pull.code(), absl::StatusCode::kAborted) << pull;
  EXPECT_NE(pull.message().find("moved past generation 4"), std::string::npos) << pull;
}

}  // namespace
}  // namespace ringside::server
