// The ParameterShard service over real gRPC (a server on port 0 in this process), driven by
// hand-made clients: the happy path, every bad input, a worker that vanishes mid-step, and a
// generation replaced while a step of it is being applied.
#include "server/ps/ps_service.h"

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/support/ps_test_hooks.h"

namespace ringside::server {
namespace {

constexpr uint64_t kRange = 1000;
constexpr uint64_t kGeneration = 4;

struct StepReply {
  grpc::Status status;
  std::vector<float> sum;  // the step's summed gradient, as the shard answered
};

class PsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OptimizerConfig sgd{OptimizerKind::kSgd, 1.0f};
    auto state =
        ShardState::Create(ShardConfig{kGeneration, 2, 0}, std::vector<float>(kRange, 100.0f), sgd);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    service_ = std::make_unique<ParameterShardService>(256);
    service_->Serve(ShardGeneration{Shard::Synchronous(state_), ShardLinkMetrics{}});
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = proto::ParameterShard::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server_.port), TransportSecurity()));
  }

  // Pushes `share` (in segments of 100) as `worker` for `step`; with `cancel_after` >= 0, sends
  // that many segments, calls `before_cancel` and cancels the stream instead of finishing.
  StepReply Push(
      uint32_t worker, uint64_t step, const std::vector<float>& share, int cancel_after = -1,
      uint64_t generation = kGeneration, uint64_t range = kRange, const std::string& link_key = "",
      const std::function<void()>& before_cancel = [] {}) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(20));
    // What the key claims: the push's own generation and rank.
    AddLinkClaim(context, LinkClaim{link_key, generation, static_cast<int>(worker), true});
    auto stream = stub_->Step(&context);
    int sent = 0;
    for (uint64_t offset = 0; offset < share.size(); offset += 100, ++sent) {
      if (sent == cancel_after) break;
      proto::PsPush push;
      push.set_generation(generation);
      push.set_worker_rank(worker);
      push.set_step(step);
      push.set_offset(offset);
      push.set_range_elements(range);
      const uint64_t count = std::min<uint64_t>(100, share.size() - offset);
      push.set_payload(reinterpret_cast<const char*>(share.data() + offset), count * 4);
      if (!stream->Write(push)) break;
    }
    StepReply reply;
    if (cancel_after >= 0) {
      before_cancel();
      context.TryCancel();
      reply.status = stream->Finish();
      return reply;
    }
    stream->WritesDone();
    proto::PsRangeValues segment;
    while (stream->Read(&segment)) {
      const auto* values = reinterpret_cast<const float*>(segment.payload().data());
      reply.sum.insert(reply.sum.end(), values, values + segment.payload().size() / 4);
    }
    reply.status = stream->Finish();
    return reply;
  }

  // Both workers push `step` concurrently; returns their replies.
  std::vector<StepReply> BothPush(uint64_t step, float value0, float value1,
                                  uint64_t generation = kGeneration) {
    std::vector<StepReply> replies(2);
    std::thread other(
        [&] { replies[1] = Push(1, step, std::vector<float>(kRange, value1), -1, generation); });
    replies[0] = Push(0, step, std::vector<float>(kRange, value0), -1, generation);
    other.join();
    return replies;
  }

  std::shared_ptr<ShardState> state_;
  std::unique_ptr<ParameterShardService> service_;
  StartedServer server_;
  std::unique_ptr<proto::ParameterShard::Stub> stub_;
};

TEST_F(PsServiceTest, EveryWorkerGetsTheWholeUpdatedRange) {
  for (uint64_t step = 0; step < 3; ++step) {
    const std::vector<StepReply> replies = BothPush(step, 1.0f, 2.0f);
    for (const StepReply& reply : replies) {
      ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
      EXPECT_EQ(reply.sum, std::vector<float>(kRange, 3.0f));
    }
    EXPECT_EQ(*state_->parameters().value(),
              std::vector<float>(kRange, 100.0f - 3.0f * (step + 1)));
  }
}

TEST_F(PsServiceTest, BadPushesGetPreciseStatusesAndTrainingContinues) {
  const std::vector<float> share(kRange, 1.0f);
  StepReply wrong_length =
      Push(0, 0, std::vector<float>(kRange + 1, 1.0f), -1, kGeneration, kRange + 1);
  EXPECT_EQ(wrong_length.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Push(0, 5, share).status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  StepReply unknown = Push(7, 0, share);
  EXPECT_EQ(unknown.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(unknown.status.error_message().find("worker rank 7"), std::string::npos);
  EXPECT_EQ(Push(0, 0, share, -1, kGeneration - 1).status.error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(state_->current_step(), 0u);
  const std::vector<StepReply> replies = BothPush(0, 1.0f, 1.0f);
  for (const StepReply& reply : replies) {
    ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
    EXPECT_EQ(reply.sum, std::vector<float>(kRange, 2.0f));
  }
}

// One Shard per generation: a push-pull one has no synchronous steps, so a Step stream is refused
// (FAILED_PRECONDITION, naming the stream to use) and nothing of the push is applied.
TEST_F(PsServiceTest, AStepToAPushPullGenerationIsRefusedNamingPushPull) {
  auto push_pull = PushPullShard::Create(PushPullShardConfig{kGeneration, 2, 0, /*staleness=*/1},
                                         std::vector<float>(kRange, 100.0f), {}, OptimizerConfig{});
  ASSERT_TRUE(push_pull.ok()) << push_pull.status();
  std::shared_ptr<PushPullShard> shard = *std::move(push_pull);
  service_->Serve(ShardGeneration{Shard::PushPull(shard), ShardLinkMetrics{}});
  const StepReply reply = Push(0, 0, std::vector<float>(kRange, 1.0f));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(reply.status.error_message().find("use PushPull"), std::string::npos)
      << reply.status.error_message();
  EXPECT_EQ(shard->completed(0), 0u);
  EXPECT_EQ(*shard->Read().values, std::vector<float>(kRange, 100.0f));
}

TEST_F(PsServiceTest, AWorkerVanishingMidStepIsNeverHalfApplied) {
  // Worker 0's three segments are in the step's sum before it vanishes. The shard is done with
  // the vanished stream (OnDone, after it abandoned the push) only some time after the worker's
  // own Finish returns: worker 1 pushes after that, else its segments could be summed with the
  // part that is to be abandoned, and the step lost instead. Worker 1's share is then complete
  // with nothing of worker 0's: the step must wait.
  struct Seen {
    absl::Mutex mu;
    int added = 0;
    absl::Notification three_added, gone, worker1_pushed;
  };
  auto seen = std::make_shared<Seen>();  // owned by the hook: a stream's last event may be late
  PsTestHooks::SetStepHook(*service_, [seen](PsTestHooks::StepEvent event, int worker) {
    using Event = PsTestHooks::StepEvent;
    if (event == Event::kSegmentAdded && worker == 0) {
      absl::MutexLock lock(&seen->mu);
      if (++seen->added == 3) seen->three_added.Notify();
    }
    if (event == Event::kDone && !seen->gone.HasBeenNotified()) seen->gone.Notify();
    if (event == Event::kPushed && worker == 1) seen->worker1_pushed.Notify();
  });
  // Worker 0 sends 3 of its 10 segments of a huge gradient, then disappears. (The only stream
  // open until it is gone is worker 0's.)
  Push(0, 0, std::vector<float>(kRange, 1e6f), /*cancel_after=*/3, kGeneration, kRange, "",
       [&seen] { seen->three_added.WaitForNotification(); });
  seen->gone.WaitForNotification();
  StepReply worker1;
  std::thread waiting([&] { worker1 = Push(1, 0, std::vector<float>(kRange, 2.0f)); });
  seen->worker1_pushed.WaitForNotification();
  EXPECT_EQ(state_->current_step(), 0u);
  // Worker 0 comes back and pushes its real share: the step completes without the lost part.
  StepReply worker0 = Push(0, 0, std::vector<float>(kRange, 1.0f));
  waiting.join();
  PsTestHooks::SetStepHook(*service_, nullptr);
  for (const StepReply* reply : {&worker0, &worker1}) {
    ASSERT_TRUE(reply->status.ok()) << reply->status.error_message();
    EXPECT_EQ(reply->sum, std::vector<float>(kRange, 3.0f)) << "the lost part never counted";
  }
}

TEST_F(PsServiceTest, ANewGenerationIsServedWhileTheOldOneIsApplyingAStep) {
  auto next = ShardState::Create(ShardConfig{kGeneration + 1, 2, 0},
                                 std::vector<float>(kRange, 50.0f), {OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(next.ok()) << next.status();
  // Owned by the hook, so it outlives the applier's last use of it.
  struct Held {
    absl::Notification applying, release;
  };
  auto held = std::make_shared<Held>();
  // Held at the step's last segment: every push is in, nothing of the step published yet.
  PsTestHooks::SetApplyHook(*state_, [held](uint64_t, uint64_t, uint64_t end) {
    if (end != kRange) return;
    held->applying.Notify();
    held->release.WaitForNotification();
  });
  std::vector<StepReply> old_replies;
  std::thread old_step([&] { old_replies = BothPush(0, 1.0f, 1.0f); });
  held->applying.WaitForNotification();  // generation 4's step 0 is held, not yet applied

  // A regroup's Load replaces the generation: it must not wait for that step.
  service_->Serve(ShardGeneration{Shard::Synchronous(*std::move(next)), ShardLinkMetrics{}});
  const std::vector<StepReply> new_replies = BothPush(0, 1.0f, 2.0f, kGeneration + 1);
  for (const StepReply& reply : new_replies) {
    EXPECT_TRUE(reply.status.ok()) << reply.status.error_message();
    EXPECT_EQ(reply.sum, std::vector<float>(kRange, 3.0f));
  }

  held->release.Notify();
  old_step.join();
  for (const StepReply& reply : old_replies) {
    EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::ABORTED)
        << "a step of a replaced generation is never answered as applied";
  }
}

// The crash of the switch from ps back to ring mode: a worker cancels its step (its generation
// was superseded) just as the applied step's reply starts on the applier thread. The cancel's
// Finish must not end the call while that thread is about to write to it: before the fix, gRPC
// ran OnDone and destroyed the stream in between, and the reply's StartWrite called a pure
// virtual method of the destroyed stream.
TEST_F(PsServiceTest, AWorkerCancellingAsItsReplyStartsEndsTheStreamOnce) {
  constexpr int kCancelling = 0;
  struct Events {
    absl::Notification pushed;    // worker 0's whole share is on the shard
    absl::Notification replying;  // worker 0's reply is about to be started
    absl::Mutex mu;
    absl::Notification finish_settled;  // its cancel's Finish deferred, or (the bug) done
    absl::Notification done;            // worker 0's OnDone
  };
  auto events = std::make_shared<Events>();
  PsTestHooks::SetStepHook(*service_, [events](PsTestHooks::StepEvent event, int worker) {
    if (worker != kCancelling) return;
    switch (event) {
      case PsTestHooks::StepEvent::kSegmentAdded:
        return;
      case PsTestHooks::StepEvent::kPushed:
        events->pushed.Notify();
        return;
      case PsTestHooks::StepEvent::kReplyStarting:
        events->replying.Notify();
        // Holds the applier between deciding to write and writing until the cancel has ended
        // the stream as far as it can.
        events->finish_settled.WaitForNotification();
        return;
      case PsTestHooks::StepEvent::kFinishDeferred:
      case PsTestHooks::StepEvent::kDone: {
        absl::MutexLock lock(&events->mu);
        if (!events->finish_settled.HasBeenNotified()) events->finish_settled.Notify();
        if (event == PsTestHooks::StepEvent::kDone) events->done.Notify();
        return;
      }
    }
  });

  StepReply other;
  std::thread other_worker;
  {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(20));
    auto stream = stub_->Step(&context);
    const std::vector<float> share(kRange, 1.0f);
    for (uint64_t offset = 0; offset < kRange; offset += 100) {
      proto::PsPush push;
      push.set_generation(kGeneration);
      push.set_worker_rank(kCancelling);
      push.set_step(0);
      push.set_offset(offset);
      push.set_range_elements(kRange);
      push.set_payload(reinterpret_cast<const char*>(share.data() + offset), 100 * 4);
      ASSERT_TRUE(stream->Write(push));
    }
    ASSERT_TRUE(stream->WritesDone());
    // Worker 1 pushes once worker 0's share is whole on the shard, so that cancelling worker 0
    // below cannot abandon a part of it (the step would be lost, not answered).
    events->pushed.WaitForNotification();
    other_worker = std::thread([&] { other = Push(1, 0, std::vector<float>(kRange, 2.0f)); });
    events->replying.WaitForNotification();  // its first segment is summed; its reply starting
    context.TryCancel();
    proto::PsRangeValues ignored;
    while (stream->Read(&ignored)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  events->done.WaitForNotification();  // the server ended the cancelled stream
  other_worker.join();
  ASSERT_TRUE(other.status.ok()) << other.status.error_message();
  EXPECT_EQ(other.sum, std::vector<float>(kRange, 3.0f));

  // The shard serves on: the cancelling worker's share counted, and the next step applies.
  PsTestHooks::SetStepHook(*service_, nullptr);
  for (const StepReply& reply : BothPush(1, 1.0f, 1.0f)) {
    ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
    EXPECT_EQ(reply.sum, std::vector<float>(kRange, 2.0f));
  }
  EXPECT_EQ(*state_->parameters().value(), std::vector<float>(kRange, 95.0f));
}

// Issue 26: a shard answers each segment as soon as every worker's share covers it. Worker 1
// pushes 3 of its 10 segments and, without pushing more, reads the sum of those elements back
// (it would wait for its deadline if the shard answered only whole steps); then it pushes the
// rest and both workers get the whole sum. The shard's link counters carry exactly the range
// each way (the cost model), however the reply was cut.
TEST_F(PsServiceTest, RepliesStreamWhileTheSharesAreStillArriving) {
  Metrics metrics(std::make_shared<prometheus::Registry>());
  ShardLinkMetrics links;
  for (int w = 0; w < 2; ++w) {
    links.from_worker.push_back(metrics.LinkReceive(WorkerName(w), PsShardName(0), SyncMode::kPs));
    links.to_worker.push_back(metrics.LinkSend(PsShardName(0), WorkerName(w), SyncMode::kPs));
  }
  auto counted =
      ShardState::Create(ShardConfig{kGeneration, 2, 0}, std::vector<float>(kRange, 100.0f),
                         {OptimizerKind::kSgd, 1.0f});
  ASSERT_TRUE(counted.ok()) << counted.status();
  state_ = *std::move(counted);
  service_->Serve(ShardGeneration{Shard::Synchronous(state_), links});
  StepReply worker0;
  std::thread full([&] { worker0 = Push(0, 0, std::vector<float>(kRange, 1.0f)); });
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(20));
  auto stream = stub_->Step(&context);
  const std::vector<float> share(kRange, 2.0f);
  auto write = [&](uint64_t offset) {
    proto::PsPush push;
    push.set_generation(kGeneration);
    push.set_worker_rank(1);
    push.set_step(0);
    push.set_offset(offset);
    push.set_range_elements(kRange);
    push.set_payload(reinterpret_cast<const char*>(share.data() + offset), 100 * 4);
    return stream->Write(push);
  };
  for (uint64_t offset = 0; offset < 300; offset += 100) ASSERT_TRUE(write(offset));
  std::vector<float> sum;
  proto::PsRangeValues segment;
  while (sum.size() < 300) {
    ASSERT_TRUE(stream->Read(&segment)) << "the first 300 elements were never answered";
    EXPECT_EQ(segment.offset(), sum.size());
    const auto* values = reinterpret_cast<const float*>(segment.payload().data());
    sum.insert(sum.end(), values, values + segment.payload().size() / 4);
  }
  EXPECT_EQ(sum.size(), 300u) << "answered past what every share holds";
  EXPECT_EQ(state_->current_step(), 0u) << "the step is not applied before every share is in";
  for (uint64_t offset = 300; offset < kRange; offset += 100) ASSERT_TRUE(write(offset));
  ASSERT_TRUE(stream->WritesDone());
  while (stream->Read(&segment)) {
    const auto* values = reinterpret_cast<const float*>(segment.payload().data());
    sum.insert(sum.end(), values, values + segment.payload().size() / 4);
  }
  ASSERT_TRUE(stream->Finish().ok());
  full.join();
  ASSERT_TRUE(worker0.status.ok()) << worker0.status.error_message();
  EXPECT_EQ(sum, std::vector<float>(kRange, 3.0f));
  EXPECT_EQ(worker0.sum, std::vector<float>(kRange, 3.0f));
  EXPECT_EQ(*state_->parameters().value(), std::vector<float>(kRange, 97.0f));
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(links.from_worker[w].bytes->Value(), kRange * 4.0) << WorkerName(w);
    EXPECT_EQ(links.to_worker[w].bytes->Value(), kRange * 4.0) << WorkerName(w);
    EXPECT_EQ(links.to_worker[w].expected_bytes->Value(), kRange * 4.0) << WorkerName(w);
    EXPECT_GE(links.to_worker[w].messages->Value(), (kRange + 63) / 64) << "at most 256 bytes each";
  }
}

// A worker lost after part of the step was summed with its share: the step cannot complete on
// this shard; the other worker is answered ABORTED at once (not at its deadline), nothing of the
// step is published, and a retry is refused: the generation must regroup.
TEST_F(PsServiceTest, AWorkerLostMidStepAfterPartWasSummedAbortsTheStep) {
  StepReply worker0;
  std::thread full([&] { worker0 = Push(0, 0, std::vector<float>(kRange, 1.0f)); });
  {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(20));
    auto stream = stub_->Step(&context);
    const std::vector<float> share(kRange, 2.0f);
    proto::PsPush push;
    push.set_generation(kGeneration);
    push.set_worker_rank(1);
    push.set_step(0);
    push.set_offset(0);
    push.set_range_elements(kRange);
    push.set_payload(reinterpret_cast<const char*>(share.data()), 100 * 4);
    ASSERT_TRUE(stream->Write(push));
    proto::PsRangeValues segment;
    ASSERT_TRUE(stream->Read(&segment)) << "part of the step is summed";
    context.TryCancel();  // worker 1 vanishes with 100 of its 1000 elements pushed
    while (stream->Read(&segment)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  full.join();
  EXPECT_EQ(worker0.status.error_code(), grpc::StatusCode::ABORTED)
      << worker0.status.error_message();
  EXPECT_EQ(state_->current_step(), 0u);
  EXPECT_EQ(state_->parameters().status().code(), absl::StatusCode::kAborted)
      << "the range is part-way through the lost step: no parameters of it are served";
  EXPECT_EQ(Push(1, 0, std::vector<float>(kRange, 2.0f)).status.error_code(),
            grpc::StatusCode::ABORTED);
}

// GetParameters while a step is part-way applied: answered when the step ends, with the whole
// step (the gRPC thread that took the call never waits for the applier).
TEST_F(PsServiceTest, AReadDuringAStepIsAnsweredWithTheWholeStepWhenItEnds) {
  absl::Notification applying;
  absl::Notification release;
  PsTestHooks::SetApplyHook(*state_, [&](uint64_t, uint64_t, uint64_t) {
    if (!applying.HasBeenNotified()) applying.Notify();
    release.WaitForNotification();  // the step's first segment is held, the rest follow
  });
  std::vector<StepReply> replies;
  std::thread step([&] { replies = BothPush(0, 1.0f, 2.0f); });
  applying.WaitForNotification();

  grpc::Status read_status;
  std::vector<uint64_t> read_steps;
  std::vector<float> read;
  std::thread reader([&] {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(20));
    auto stream = stub_->GetParameters(&context, proto::PsRangeRequest());
    proto::PsRangeValues segment;
    while (stream->Read(&segment)) {
      read_steps.push_back(segment.step());
      const auto* values = reinterpret_cast<const float*>(segment.payload().data());
      read.insert(read.end(), values, values + segment.payload().size() / sizeof(float));
    }
    read_status = stream->Finish();
  });
  PsTestHooks::AwaitWaitingReads(*state_, 1);  // the read reached the shard and waits
  release.Notify();
  reader.join();
  step.join();

  ASSERT_TRUE(read_status.ok()) << read_status.error_message();
  EXPECT_EQ(read, std::vector<float>(kRange, 97.0f)) << "the parameters after the whole step";
  EXPECT_EQ(read_steps, std::vector<uint64_t>(read_steps.size(), 1u));
  for (const StepReply& reply : replies)
    EXPECT_TRUE(reply.status.ok()) << reply.status.error_message();
}

// Issue 51: a read of the live parameters is checked before the shard says anything: its load
// key against the generation it claims beside it, then the generation served. A caller without
// the key learns neither whether the shard serves a generation nor which.
TEST_F(PsServiceTest, AParameterReadIsCheckedBeforeTheShardSaysWhatItServes) {
  const std::string credential = Hmac("ps-test", "shard-0");
  service_->SetMemberCredential(credential);
  auto read = [&](const LinkClaim& claim) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    AddLinkClaim(context, claim);
    auto reader = stub_->GetParameters(&context, proto::PsRangeRequest());
    proto::PsRangeValues values;
    size_t segments = 0;
    while (reader->Read(&values)) ++segments;
    const grpc::Status status = reader->Finish();
    return std::make_pair(status, segments);
  };
  const auto unclaimed = read(LinkClaim{ShardLoadKey(credential, kGeneration), 0, -1, false});
  EXPECT_EQ(unclaimed.first.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "a key that claims no generation: " << unclaimed.first.error_message();
  const auto forged = read(LinkClaim{"forged", kGeneration, -1, true});
  EXPECT_EQ(forged.first.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(forged.first.error_message().find("serves"), std::string::npos)
      << forged.first.error_message();
  const auto older =
      read(LinkClaim{ShardLoadKey(credential, kGeneration - 1), kGeneration - 1, -1, true});
  EXPECT_EQ(older.first.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << "an older generation's own key: " << older.first.error_message();
  EXPECT_EQ(older.second, 0u);
  const auto current =
      read(LinkClaim{ShardLoadKey(credential, kGeneration), kGeneration, -1, true});
  EXPECT_TRUE(current.first.ok()) << current.first.error_message();
  EXPECT_GE(current.second, 1u);

  // A shard serving nothing yet says so only to a caller with the key of the generation it claims.
  ParameterShardService empty(256);
  empty.SetMemberCredential(credential);
  auto server = StartServer("127.0.0.1:0", {&empty}, TransportSecurity());
  ASSERT_TRUE(server.ok()) << server.status();
  stub_ = proto::ParameterShard::NewStub(
      MakeChannel("127.0.0.1:" + std::to_string(server->port), TransportSecurity()));
  EXPECT_EQ(read(LinkClaim{"", kGeneration, -1, true}).first.error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(read(LinkClaim{ShardLoadKey(credential, 9), 9, -1, true}).first.error_code(),
            grpc::StatusCode::FAILED_PRECONDITION)
      << "the designated member is told the shard holds nothing yet";
}

// Issue 13: an elastic shard takes pushes only from the workers the controller assigned to its
// generation, each as its own rank, and Load and GetParameters only from rank 0; a forged push
// (1e30, say) or a junk Load changes nothing, and the honest workers' step goes through.
TEST_F(PsServiceTest, OnlyAssignedWorkersMayPushLoadOrRead) {
  const std::string credential = Hmac("ps-test", "shard-0");
  service_->SetMemberCredential(credential);
  service_->SetJob(ShardJob{0, ElementRange{0, kRange}, OptimizerConfig{OptimizerKind::kSgd, 1.0f},
                            kGeneration + 1});
  const std::vector<float> forged(kRange, 1e30f);
  EXPECT_EQ(Push(0, 0, forged).status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "no key";
  EXPECT_EQ(Push(0, 0, forged, -1, kGeneration, kRange, ShardStepKey(credential, kGeneration, 1))
                .status.error_code(),
            grpc::StatusCode::PERMISSION_DENIED)
      << "worker 1's key, claiming rank 0";
  EXPECT_EQ(Push(0, 0, forged, -1, kGeneration, kRange,
                 ShardStepKey(Hmac("ps-test", "shard-1"), kGeneration, 0))
                .status.error_code(),
            grpc::StatusCode::PERMISSION_DENIED)
      << "a key for another shard";

  auto load = [&](uint32_t workers, const std::string& key) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    AddLinkClaim(context, LinkClaim{key, kGeneration + 1, -1, true});
    proto::PsLoadReply reply;
    auto writer = stub_->Load(&context, &reply);
    proto::PsStateSegment segment;
    segment.set_generation(kGeneration + 1);
    segment.set_workers(workers);
    segment.set_range_elements(kRange);
    segment.set_state_elements(kRange + 1);
    segment.set_payload(std::string((kRange + 1) * sizeof(float), '\x7f'));
    writer->Write(segment);
    writer->WritesDone();
    return writer->Finish().error_code();
  };
  EXPECT_EQ(load(2, ""), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(load(2, ShardStepKey(credential, kGeneration + 1, 0)),
            grpc::StatusCode::PERMISSION_DENIED)
      << "a step key is not a load key";
  EXPECT_EQ(load(0x7fffffff, ShardLoadKey(credential, kGeneration + 1)),
            grpc::StatusCode::INVALID_ARGUMENT)
      << "a worker count that would allocate a share per worker is bounded";

  grpc::ClientContext read_context;
  SetDeadline(read_context, absl::Seconds(10));
  auto reader = stub_->GetParameters(&read_context, proto::PsRangeRequest());
  proto::PsRangeValues values;
  EXPECT_FALSE(reader->Read(&values)) << "the live model leaked";
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);

  EXPECT_EQ(*state_->parameters().value(), std::vector<float>(kRange, 100.0f)) << "nothing changed";
  std::vector<StepReply> replies(2);
  std::thread other([&] {
    replies[1] = Push(1, 0, std::vector<float>(kRange, 2.0f), -1, kGeneration, kRange,
                      ShardStepKey(credential, kGeneration, 1));
  });
  replies[0] = Push(0, 0, std::vector<float>(kRange, 1.0f), -1, kGeneration, kRange,
                    ShardStepKey(credential, kGeneration, 0));
  other.join();
  for (const StepReply& reply : replies) {
    ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
    EXPECT_EQ(reply.sum, std::vector<float>(kRange, 3.0f));
  }
}

}  // namespace
}  // namespace ringside::server
