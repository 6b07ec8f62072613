// The Controller service over real gRPC in one process: tokens, watch streams and mode changes.
#include "control/controller_service.h"

#include <sstream>

#include "common/auth.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"

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
  context.TryCancel();
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

}  // namespace
}  // namespace ringside::server
