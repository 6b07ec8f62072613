// The Controller service over real gRPC in one process: tokens, watch streams and mode changes;
// and members (real ControllerClients) that the controller dropped while they were alive, or
// forgot in a restart without its record, registering again.
#include "server/controller/controller_service.h"

#include <atomic>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "server/controller/controller_client.h"
#include "tests/support/poll.h"

namespace ringside::server {
namespace {

// Each member's own secret, as a member makes it (common/auth.h).
std::string CredentialOf(const std::string& address) {
  return Hmac("test", address);  // 64 hex characters, distinct per member
}
constexpr char kOperatorToken[] = "operator-s3cret";

class ControllerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MembershipConfig config;
    config.workers = 2;
    config.ps_shards = 1;
    config.join_token = "s3cret";
    membership_ = std::make_unique<Membership>(config);
    proto::JobSpec job;
    job.set_model("4,16,3");
    job.set_staleness("2");  // the ps settings ride in every assignment, across mode switches
    job.set_straggler("worker-1:3");
    service_ = std::make_unique<ControllerService>(*membership_, job, absl::Seconds(9), log_);
    service_->SetOperatorToken(kOperatorToken);
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = proto::Controller::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server_.port), TransportSecurity()));
  }

  absl::StatusOr<uint64_t> Register(const std::string& token, proto::Role role,
                                    const std::string& address) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    proto::RegisterRequest request;
    request.set_join_token(token);
    request.set_role(role);
    request.set_address(address);
    request.set_member_credential(CredentialOf(address));
    proto::RegisterReply reply;
    const grpc::Status status = stub_->Register(&context, request, &reply);
    if (!status.ok()) return FromGrpcStatus(status);
    EXPECT_EQ(reply.heartbeat_interval_ms(), 3000u);
    return reply.member_id();
  }

  std::ostringstream log_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<ControllerService> service_;
  StartedServer server_;
  std::unique_ptr<proto::Controller::Stub> stub_;
};

TEST_F(ControllerServiceTest, AWrongTokenIsUnauthenticatedAndLogged) {
  EXPECT_EQ(Register("guess", proto::ROLE_WORKER, "worker-a.test:7000").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_NE(log_.str().find("refused registration"), std::string::npos) << log_.str();
  EXPECT_TRUE(Register("s3cret", proto::ROLE_WORKER, "worker-a.test:7000").ok());
}

TEST_F(ControllerServiceTest, WatchersLearnTheTopologyAndEveryModeChange) {
  auto w0 = Register("s3cret", proto::ROLE_WORKER, "worker-a.test:7000");
  ASSERT_TRUE(w0.ok()) << w0.status();
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(20));
  context.AddMetadata(kMemberCredentialMetadata, CredentialOf("worker-a.test:7000"));
  proto::WatchRequest request;
  request.set_member_id(*w0);
  auto watch = stub_->Watch(&context, request);
  ASSERT_TRUE(Register("s3cret", proto::ROLE_PS, "shard-a.test:8000").ok());
  ASSERT_TRUE(Register("s3cret", proto::ROLE_WORKER, "worker-b.test:7000").ok());
  proto::Assignment assignment;
  ASSERT_TRUE(watch->Read(&assignment));
  EXPECT_EQ(assignment.generation(), 1u);
  EXPECT_EQ(assignment.rank(), 0);
  EXPECT_EQ(assignment.mode(), "ring");
  ASSERT_EQ(assignment.ring_size(), 2);
  EXPECT_EQ(assignment.shards(0), "shard-a.test:8000");
  EXPECT_EQ(assignment.job().model(), "4,16,3");
  EXPECT_EQ(assignment.job().staleness(), "2");

  grpc::ClientContext mode_context;
  SetDeadline(mode_context, absl::Seconds(10));
  proto::ModeRequest mode;
  mode.set_mode("ps");
  mode_context.AddMetadata(kOperatorTokenMetadata, kOperatorToken);
  proto::ModeReply mode_reply;
  ASSERT_TRUE(stub_->SetMode(&mode_context, mode, &mode_reply).ok());
  EXPECT_EQ(mode_reply.generation(), 2u);
  ASSERT_TRUE(watch->Read(&assignment));
  EXPECT_EQ(assignment.generation(), 2u);
  EXPECT_EQ(assignment.mode(), "ps");
  EXPECT_EQ(assignment.job().staleness(), "2");
  EXPECT_EQ(assignment.job().straggler(), "worker-1:3");

  // A switch to the mode already running changes nothing and says so.
  grpc::ClientContext again_context;
  SetDeadline(again_context, absl::Seconds(10));
  again_context.AddMetadata(kOperatorTokenMetadata, kOperatorToken);
  proto::ModeReply again_reply;
  ASSERT_TRUE(stub_->SetMode(&again_context, mode, &again_reply).ok());
  EXPECT_TRUE(again_reply.unchanged());
  EXPECT_EQ(again_reply.generation(), 2u);
  EXPECT_EQ(membership_->topology().generation, 2u) << "no regroup for the running mode";
  EXPECT_FALSE(mode_reply.unchanged());
  context.TryCancel();
}

// A ps-only compression (top-k) cannot follow the job into a ring: the switch is refused, naming
// why, and the job stays in ps mode; a switch the compression fits (random-k, PowerSGD) goes
// through.
TEST(ControllerCompressionTest, ASwitchToAModeTheCompressionDoesNotFitIsRefused) {
  for (const char* compression : {"topk:0.01", "randomk:0.01", "powersgd:2"}) {
    SCOPED_TRACE(compression);
    MembershipConfig config;
    config.workers = 1;
    config.ps_shards = 1;
    config.join_token = "s3cret";
    config.mode = SyncMode::kPs;
    Membership membership(config);
    ASSERT_TRUE(membership
                    .Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", absl::Now(),
                              CredentialOf("worker-a.test:7000"))
                    .ok());
    ASSERT_TRUE(membership
                    .Register("s3cret", MemberRole::kShard, "shard-a.test:8000", absl::Now(),
                              CredentialOf("shard-a.test:8000"))
                    .ok());
    ASSERT_EQ(membership.topology().generation, 1u);
    proto::JobSpec job;
    job.set_compression(compression);
    std::ostringstream log;
    ControllerService service(membership, job, absl::Seconds(9), log);
    service.SetOperatorToken(kOperatorToken);
    auto server = StartServer("127.0.0.1:0", {&service}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    auto stub = proto::Controller::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server->port), TransportSecurity()));
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    context.AddMetadata(kOperatorTokenMetadata, kOperatorToken);
    proto::ModeRequest request;
    request.set_mode("ring");
    proto::ModeReply reply;
    const grpc::Status status = stub->SetMode(&context, request, &reply);
    if (absl::string_view(compression) == "topk:0.01") {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_NE(status.error_message().find("does not fit ring mode"), std::string::npos)
          << status.error_message();
      EXPECT_EQ(membership.topology().generation, 1u) << "nothing switched";
      EXPECT_EQ(membership.topology().mode, SyncMode::kPs);
    } else {
      EXPECT_TRUE(status.ok()) << status.error_message();
      EXPECT_EQ(membership.topology().generation, 2u);
      EXPECT_EQ(membership.topology().mode, SyncMode::kRing);
    }
  }
}

TEST_F(ControllerServiceTest, WatchingAsAnUnknownMemberIsNotFound) {
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(10));
  proto::WatchRequest request;
  request.set_member_id(42);
  auto watch = stub_->Watch(&context, request);
  proto::Assignment assignment;
  EXPECT_FALSE(watch->Read(&assignment));
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// Issue 51: a member holds at most kWatchLimits.per_peer Watch streams at once (a reconnecting
// member's old one may not have ended yet), not as many as it opens; a place freed is taken again.
TEST_F(ControllerServiceTest, AMemberHoldsABoundedNumberOfWatchStreams) {
  absl::StatusOr<uint64_t> member = Register("s3cret", proto::ROLE_WORKER, "worker-a.test:7000");
  ASSERT_TRUE(member.ok()) << member.status();
  struct OpenWatch {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<proto::Assignment>> reader;
  };
  auto open = [&] {
    auto watch = std::make_unique<OpenWatch>();
    SetDeadline(watch->context, absl::Seconds(60));
    watch->context.AddMetadata(kMemberCredentialMetadata, CredentialOf("worker-a.test:7000"));
    proto::WatchRequest request;
    request.set_member_id(*member);
    watch->reader = stub_->Watch(&watch->context, request);
    return watch;
  };
  const int bound = ControllerService::kWatchLimits.per_peer;
  std::vector<std::unique_ptr<OpenWatch>> held;
  for (int i = 0; i < bound; ++i) {
    held.push_back(open());
    // Admitted when the controller has taken the call: each in turn, so the next is the one over.
    ASSERT_TRUE(testing::PollUntil([&] { return service_->watch_streams_held() == i + 1; },
                                   absl::Seconds(30))
                    .ok());
  }
  std::unique_ptr<OpenWatch> beyond = open();
  proto::Assignment assignment;
  EXPECT_FALSE(beyond->reader->Read(&assignment));
  const grpc::Status refused = beyond->reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_EQ(service_->watch_streams_held(), bound);
  held.front()->context.TryCancel();
  held.front()->reader->Finish();
  ASSERT_TRUE(testing::PollUntil([&] { return service_->watch_streams_held() == bound - 1; },
                                 absl::Seconds(30))
                  .ok());
  held.front() = open();
  EXPECT_TRUE(
      testing::PollUntil([&] { return service_->watch_streams_held() == bound; }, absl::Seconds(30))
          .ok())
      << "the freed place was never taken again";
  for (auto& watch : held) watch->context.TryCancel();
}

// Issue 13: every controller RPC but Register needs a credential, and another member's will not
// do: watching, heartbeating or switching modes as someone else is refused, and the job's
// assignments (addresses, keys) are never handed to a stranger.
TEST_F(ControllerServiceTest, EveryCallNeedsItsOwnCredential) {
  auto w0 = Register("s3cret", proto::ROLE_WORKER, "worker-a.test:7000");
  auto w1 = Register("s3cret", proto::ROLE_WORKER, "worker-b.test:7000");
  auto s0 = Register("s3cret", proto::ROLE_PS, "shard-a.test:8000");
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  ASSERT_EQ(membership_->topology().generation, 1u);
  auto watch_as = [&](uint64_t member, const std::string& credential) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    if (!credential.empty()) context.AddMetadata(kMemberCredentialMetadata, credential);
    proto::WatchRequest request;
    request.set_member_id(member);
    auto watch = stub_->Watch(&context, request);
    proto::Assignment assignment;
    EXPECT_FALSE(watch->Read(&assignment)) << "an assignment leaked to a stranger";
    return watch->Finish().error_code();
  };
  EXPECT_EQ(watch_as(*w0, ""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(watch_as(*w0, CredentialOf("worker-b.test:7000")), grpc::StatusCode::UNAUTHENTICATED);

  auto heartbeat_as = [&](uint64_t member, const std::string& credential) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    if (!credential.empty()) context.AddMetadata(kMemberCredentialMetadata, credential);
    proto::HeartbeatRequest request;
    request.set_member_id(member);
    request.set_generation(1);
    proto::HeartbeatReply reply;
    return stub_->Heartbeat(&context, request, &reply).error_code();
  };
  EXPECT_EQ(heartbeat_as(*w1, ""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(heartbeat_as(*w1, CredentialOf("worker-a.test:7000")),
            grpc::StatusCode::UNAUTHENTICATED)
      << "keeping another member alive";
  EXPECT_EQ(heartbeat_as(*w1, CredentialOf("worker-b.test:7000")), grpc::StatusCode::OK);

  auto set_mode = [&](const std::string& token) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    if (!token.empty()) context.AddMetadata(kOperatorTokenMetadata, token);
    proto::ModeRequest request;
    request.set_mode("ring");
    proto::ModeReply reply;
    return stub_->SetMode(&context, request, &reply).error_code();
  };
  EXPECT_EQ(set_mode(""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(set_mode(CredentialOf("worker-a.test:7000")), grpc::StatusCode::UNAUTHENTICATED)
      << "a member is not an operator";
  EXPECT_EQ(membership_->topology().generation, 1u) << "nothing switched";
  EXPECT_NE(log_.str().find("refused a mode switch"), std::string::npos);
  EXPECT_EQ(set_mode(kOperatorToken), grpc::StatusCode::OK);

  // A registration must bring a credential of its own.
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(10));
  proto::RegisterRequest request;
  request.set_join_token("s3cret");
  request.set_role(proto::ROLE_WORKER);
  request.set_address("worker-c.test:7000");
  proto::RegisterReply reply;
  EXPECT_EQ(stub_->Register(&context, request, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// The link keys a watcher receives are the ones its callees will check: its right neighbour's
// ring key and each shard's step key, made with their credentials; rank 0 also gets load keys.
TEST_F(ControllerServiceTest, AssignmentsCarryTheKeysTheirCalleesCheck) {
  auto w0 = Register("s3cret", proto::ROLE_WORKER, "worker-a.test:7000");
  auto s0 = Register("s3cret", proto::ROLE_PS, "shard-a.test:8000");
  auto w1 = Register("s3cret", proto::ROLE_WORKER, "worker-b.test:7000");
  ASSERT_TRUE(w0.ok() && s0.ok() && w1.ok());
  for (const auto& [member, address] :
       {std::pair<uint64_t, std::string>{*w0, "worker-a.test:7000"}, {*w1, "worker-b.test:7000"}}) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    context.AddMetadata(kMemberCredentialMetadata, CredentialOf(address));
    proto::WatchRequest request;
    request.set_member_id(member);
    auto watch = stub_->Watch(&context, request);
    proto::Assignment assignment;
    ASSERT_TRUE(watch->Read(&assignment));
    const int rank = assignment.rank();
    const std::string right = rank == 0 ? "worker-b.test:7000" : "worker-a.test:7000";
    EXPECT_EQ(assignment.ring_key(), RingLinkKey(CredentialOf(right), 1, rank));
    ASSERT_EQ(assignment.shard_keys_size(), 1);
    EXPECT_EQ(assignment.shard_keys(0), ShardStepKey(CredentialOf("shard-a.test:8000"), 1, rank));
    EXPECT_EQ(assignment.load_keys_size(), rank == 0 ? 1 : 0);
    context.TryCancel();
  }
}

// Issue 23: members registering again. A controller on loopback whose registrations and
// heartbeats are stamped with a manual clock, so a test drops a member by withholding its
// heartbeats (the client's test gate) and expiring at a time every other member heartbeated at.
class ControllerRegisterAgainTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kTimeout = absl::Milliseconds(150);  // heartbeats' pace only

  // One member's client with the test's handles on it.
  struct Member {
    std::atomic<bool> silent{false};
    std::atomic<int> withheld{0};
    std::vector<std::string> credentials;  // the installed ones, written on the watch thread
    std::unique_ptr<ControllerClient> client;
  };

  // `prepare` runs on the membership before anything is served.
  void StartController(int workers, int port = 0,
                       const std::function<void(Membership&)>& prepare = nullptr) {
    MembershipConfig config;
    config.workers = workers;
    config.ps_shards = 0;
    config.join_token = "s3cret";
    config.heartbeat_timeout = kTimeout;
    membership_ = std::make_unique<Membership>(config);
    log_ = std::make_unique<std::ostringstream>();
    service_ = std::make_unique<ControllerService>(*membership_, proto::JobSpec(), kTimeout, *log_);
    service_->SetClock([this] { return Now(); });
    service_->SetOperatorToken(kOperatorToken);
    if (prepare) prepare(*membership_);
    auto server =
        StartServer(absl::StrCat("127.0.0.1:", port), {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // Registers `member` at `address`; with `register_again`, it registers again when dropped.
  void Connect(Member& member, const std::string& address, bool register_again) {
    ControllerClientOptions options;
    options.controller = absl::StrCat("127.0.0.1:", server_.port);
    options.join_token = "s3cret";
    options.address = address;
    options.credential = RandomSecret().value();
    options.register_timeout = absl::Seconds(30);
    options.heartbeat_gate = [&member] {
      if (!member.silent) return true;
      ++member.withheld;
      return false;
    };
    if (register_again) {
      options.install_credential = [&member](const std::string& fresh) {
        member.credentials.push_back(fresh);
      };
    }
    member.credentials.push_back(options.credential);
    auto client = ControllerClient::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    member.client = *std::move(client);
  }

  absl::Time Now() {
    absl::MutexLock lock(&clock_mu_);
    return now_;
  }

  bool Eventually(const std::function<bool()>& event) {
    const absl::Status status = testing::PollUntil(event, absl::Minutes(1));
    EXPECT_TRUE(status.ok()) << status << "; the controller's log:\n" << log_->str();
    return status.ok();
  }

  // A heartbeat as `member` with `credential`, straight to the controller.
  grpc::StatusCode HeartbeatAs(uint64_t member, const std::string& credential) {
    auto stub = proto::Controller::NewStub(
        MakeChannel(absl::StrCat("127.0.0.1:", server_.port), TransportSecurity()));
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    context.AddMetadata(kMemberCredentialMetadata, credential);
    proto::HeartbeatRequest request;
    request.set_member_id(member);
    request.set_generation(membership_->topology().generation);
    proto::HeartbeatReply reply;
    return stub->Heartbeat(&context, request, &reply).error_code();
  }

  absl::Mutex clock_mu_;
  absl::Time now_ ABSL_GUARDED_BY(clock_mu_) = absl::FromUnixSeconds(1000);
  std::unique_ptr<std::ostringstream> log_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<ControllerService> service_;
  StartedServer server_;
};

TEST_F(ControllerRegisterAgainTest, ADroppedLiveMemberRegistersAgainWithAFreshCredential) {
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/2));
  Member rejoins, ends;
  ASSERT_NO_FATAL_FAILURE(Connect(rejoins, "worker-a.test:7000", /*register_again=*/true));
  ASSERT_NO_FATAL_FAILURE(Connect(ends, "worker-b.test:7000", /*register_again=*/false));
  ASSERT_TRUE(Eventually([&] { return rejoins.client->latest_generation() == 1; }));
  const uint64_t old_id = rejoins.client->member_id();

  // Both go silent; once each has withheld a heartbeat none of theirs is in flight, and the
  // clock passes the timeout.
  rejoins.silent = ends.silent = true;
  ASSERT_TRUE(Eventually([&] { return rejoins.withheld > 0 && ends.withheld > 0; }));
  {
    absl::MutexLock lock(&clock_mu_);
    now_ += 2 * kTimeout;
  }
  EXPECT_EQ(membership_->Expire(Now()).size(), 2u);
  service_->Notify();

  // One registers again (a new id, a fresh credential, the next generation as the last rank);
  // the other, which does not, ends as before.
  ASSERT_TRUE(Eventually([&] {
    return rejoins.client->registrations() == 2 && rejoins.client->latest_generation() == 3 &&
           !ends.client->failure().ok();
  }));
  EXPECT_EQ(ends.client->failure().code(), absl::StatusCode::kNotFound) << ends.client->failure();
  EXPECT_TRUE(rejoins.client->failure().ok()) << rejoins.client->failure();
  const uint64_t new_id = rejoins.client->member_id();
  EXPECT_NE(new_id, old_id);
  EXPECT_EQ(rejoins.client->latest()->rank(), 0);
  ASSERT_EQ(rejoins.credentials.size(), 2u) << "one fresh credential installed";
  EXPECT_NE(rejoins.credentials[1], rejoins.credentials[0]);
  EXPECT_EQ(membership_->CredentialOf(new_id), rejoins.credentials[1]);
  EXPECT_EQ(HeartbeatAs(old_id, rejoins.credentials[0]), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(HeartbeatAs(new_id, rejoins.credentials[0]), grpc::StatusCode::UNAUTHENTICATED)
      << "the old credential does not stand for the new registration";
  rejoins.silent = false;
  const int accepted = rejoins.client->heartbeats_accepted();
  EXPECT_TRUE(Eventually([&] { return rejoins.client->heartbeats_accepted() > accepted; }))
      << "the new registration heartbeats";
  EXPECT_NE(log_->str().find("again: it had seen generation 1"), std::string::npos) << log_->str();
}

// Issue 48: a member told to stop leaves. Its own credential is needed (a leave for another
// member, or with a wrong credential, changes nothing); the others learn of the generation
// without it at once, with the clock standing still (no heartbeat timeout is involved); the
// leaver does not take the end of its watch for a drop and register again; a second leave, and
// a leave of a member already gone, are refused.
TEST_F(ControllerRegisterAgainTest, AMemberThatLeavesIsDroppedAtOnceAndDoesNotRegisterAgain) {
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/2));
  Member stays, leaves;
  ASSERT_NO_FATAL_FAILURE(Connect(stays, "worker-a.test:7000", /*register_again=*/true));
  ASSERT_NO_FATAL_FAILURE(Connect(leaves, "worker-b.test:7000", /*register_again=*/true));
  ASSERT_TRUE(Eventually([&] {
    return stays.client->latest_generation() == 1 && leaves.client->latest_generation() == 1;
  }));
  const uint64_t leaver = leaves.client->member_id();

  auto leave_as = [&](uint64_t member, const std::string& credential) {
    auto stub = proto::Controller::NewStub(
        MakeChannel(absl::StrCat("127.0.0.1:", server_.port), TransportSecurity()));
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    if (!credential.empty()) context.AddMetadata(kMemberCredentialMetadata, credential);
    proto::LeaveRequest request;
    request.set_member_id(member);
    proto::LeaveReply reply;
    return stub->Leave(&context, request, &reply).error_code();
  };
  EXPECT_EQ(leave_as(leaver, ""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(leave_as(leaver, stays.credentials[0]), grpc::StatusCode::UNAUTHENTICATED)
      << "one member making another leave";
  EXPECT_EQ(leave_as(12345, stays.credentials[0]), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(membership_->topology().generation, 1u) << "a refused leave changes nothing";

  leaves.client->set_completed_steps(7);
  absl::StatusOr<uint64_t> left = leaves.client->Leave();
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(*left, 2u);
  ASSERT_TRUE(Eventually([&] { return stays.client->latest_generation() == 2; }));
  EXPECT_EQ(stays.client->latest()->rank(), 0);
  EXPECT_EQ(stays.client->latest()->ring_size(), 1);
  EXPECT_EQ(leaves.client->Leave().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(leave_as(leaver, leaves.credentials[0]), grpc::StatusCode::NOT_FOUND)
      << "a member already gone";
  EXPECT_EQ(membership_->topology().generation, 2u);
  EXPECT_NE(log_->str().find("(worker-1) left having completed 7 steps; generation 2 goes on"),
            std::string::npos)
      << log_->str();
  // Dropped, a member that may register again would (ADroppedLiveMember... above); one that
  // left must not. Its threads end with it: whatever it did is done by then.
  EXPECT_TRUE(leaves.client->failure().ok()) << leaves.client->failure();
  leaves.client.reset();
  for (const MembershipRecord::Member& member : membership_->Record().members) {
    EXPECT_NE(member.address, "worker-b.test:7000") << "the leaver registered again";
  }
}

// The choice for a controller restarted without its record: its members register again too,
// reporting the newest generation they saw, and the new controller numbers above it (the job's
// state is the workers', which the next regroup agrees on). Its ids start over, so one member's
// old id is now someone else's: that watch is refused UNAUTHENTICATED, which is answered the
// same way.
TEST_F(ControllerRegisterAgainTest,
       AControllerRestartedWithoutItsRecordIsJoinedAgainAboveTheOldNumbers) {
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/2));
  Member a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, "worker-a.test:7000", /*register_again=*/true));
  ASSERT_NO_FATAL_FAILURE(Connect(b, "worker-b.test:7000", /*register_again=*/true));
  ASSERT_EQ(a.client->member_id(), 1u);
  ASSERT_TRUE(membership_->SetMode(SyncMode::kRing).ok());  // generation 2
  service_->Notify();
  ASSERT_TRUE(Eventually(
      [&] { return a.client->latest_generation() == 2 && b.client->latest_generation() == 2; }));

  const int port = server_.port;
  server_ = StartedServer();  // shut down
  service_.reset();
  // A fresh membership at the same address, where id 1 is already another member's.
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/3, port, [](Membership& fresh) {
    const auto stranger = fresh.Register("s3cret", MemberRole::kWorker, "worker-c.test:7000",
                                         absl::FromUnixSeconds(1000), CredentialOf("c"));
    ASSERT_EQ(stranger.value_or(0), 1u);
  }));
  ASSERT_TRUE(Eventually(
      [&] { return a.client->latest_generation() == 3 && b.client->latest_generation() == 3; }));
  for (Member* member : {&a, &b}) {
    EXPECT_EQ(member->client->registrations(), 2);
    EXPECT_TRUE(member->client->failure().ok()) << member->client->failure();
  }
  EXPECT_EQ(membership_->topology().generation, 3u);
  EXPECT_EQ(membership_->topology().workers.size(), 3u);
  EXPECT_NE(log_->str().find("again: it had seen generation 2"), std::string::npos) << log_->str();
  a.client.reset();
  b.client.reset();
}

// The daemons' registration (ringside-worker, ringside-ps): RegisterMember reads the token file,
// registers the member's role, address and credential, and, each time the member registers
// again, installs the fresh credential and says so in the daemon's log under its own name.
TEST_F(ControllerRegisterAgainTest, RegisterMemberJoinsAndLogsEachRegistrationAgain) {
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/1));
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("register-member-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  MemberOptions member;
  member.controller = absl::StrCat("127.0.0.1:", server_.port);
  member.join_token_file = dir->File("join_token");
  member.register_timeout = absl::Seconds(30);
  ASSERT_TRUE(WriteFileAtomically(member.join_token_file, "s3cret\n").ok());
  EXPECT_TRUE(ValidateMemberOptions(member).ok()) << ValidateMemberOptions(member);

  struct Joined {
    std::ostringstream log;
    std::vector<std::string> installed;  // written on the watch thread before registering
    std::unique_ptr<ControllerClient> client;
  };
  Joined worker, shard;
  const auto join = [&](Joined& joined, proto::Role role, const std::string& address) {
    MemberRegistration registration;
    registration.role = role;
    registration.address = address;
    registration.credential = RandomSecret().value();
    registration.install_credential = [&joined](const std::string& fresh) {
      joined.installed.push_back(fresh);
    };
    absl::StatusOr<std::unique_ptr<ControllerClient>> client =
        RegisterMember(member, std::move(registration), joined.log);
    ASSERT_TRUE(client.ok()) << client.status();
    joined.client = *std::move(client);
  };
  ASSERT_NO_FATAL_FAILURE(join(worker, proto::ROLE_WORKER, "worker-a.test:7000"));
  ASSERT_NO_FATAL_FAILURE(join(shard, proto::ROLE_PS, "shard-a.test:8000"));
  ASSERT_TRUE(Eventually([&] { return shard.client->latest().has_value(); }));
  EXPECT_EQ(shard.client->latest()->shard(), 0) << "registered as a shard";
  EXPECT_EQ(worker.client->latest()->rank(), 0) << "registered as a worker";

  // A controller restarted without its record: both register again.
  const int port = server_.port;
  server_ = StartedServer();
  service_.reset();
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/1, port));
  ASSERT_TRUE(Eventually(
      [&] { return worker.client->registrations() == 2 && shard.client->registrations() == 2; }));
  EXPECT_EQ(worker.installed.size(), 1u);
  EXPECT_EQ(shard.installed.size(), 1u);
  EXPECT_TRUE(absl::StrContains(worker.log.str(),
                                "worker: the controller no longer knows this worker; registering "
                                "again with a fresh credential\n"))
      << worker.log.str();
  EXPECT_TRUE(absl::StrContains(shard.log.str(),
                                "ps: the controller no longer knows this shard; registering again "
                                "with a fresh credential\n"))
      << shard.log.str();
  worker.client.reset();
  shard.client.reset();
}

// Bad member flags are refused before anything is dialled, naming the flag.
TEST(RegisterMemberTest, BadFlagsAreRefusedNamingTheFlag) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("register-member-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  MemberOptions member;
  member.controller = "127.0.0.1:1";  // never dialled
  member.join_token_file = dir->File("absent");
  const absl::Status missing = ValidateMemberOptions(member);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_TRUE(absl::StrContains(missing.message(), "--join_token_file")) << missing;
  std::ostringstream log;
  const absl::Status refused = RegisterMember(member, MemberRegistration(), log).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kNotFound) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "--join_token_file")) << refused;

  member.join_token_file = "";
  EXPECT_EQ(ValidateMemberOptions(member).code(), absl::StatusCode::kInvalidArgument);
  member.controller = "no port";
  const absl::Status bad = ValidateMemberOptions(member);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_TRUE(absl::StrContains(bad.message(), "--controller")) << bad;
  EXPECT_TRUE(log.str().empty()) << log.str();
}

}  // namespace
}  // namespace ringside::server
