// The Controller service over real gRPC in one process: tokens, watch streams and mode changes.
#include "control/controller_service.h"

#include <sstream>

#include "common/grpc_util.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

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

}  // namespace
}  // namespace ringside::server
