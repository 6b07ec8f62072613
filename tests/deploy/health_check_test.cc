// cli/health_check: the hand-encoded grpc.health.v1 client against a real gRPC server on port 0
// (StartServer enables gRPC's default health service), as `ringside health` uses it.
#include "cli/health_check.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/free_port.h"
#include "proto/controller.grpc.pb.h"

namespace ringside::cli {
namespace {

// A server with one (unimplemented) service: gRPC adds its default health service only to a
// server that has services. The service outlives the server (members destroy in reverse).
struct HealthServer {
  proto::Controller::Service unimplemented;
  StartedServer started;
};

absl::StatusOr<std::unique_ptr<HealthServer>> StartHealthServer() {
  auto server = std::make_unique<HealthServer>();
  absl::StatusOr<StartedServer> started =
      StartServer("127.0.0.1:0", {&server->unimplemented}, TransportSecurity());
  if (!started.ok()) return started.status();
  server->started = *std::move(started);
  return server;
}

TEST(HealthCheckTest, ServingServerIsHealthy) {
  auto server = StartHealthServer();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(CheckHealth(absl::StrCat("127.0.0.1:", (*server)->started.port), absl::Seconds(5),
                          TransportSecurity())
                  .ok());
}

TEST(HealthCheckTest, AServerThatStoppedReportingReadyIsUnavailable) {
  auto server = StartHealthServer();
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->started.StopReportingReady();  // what a daemon does as it starts to leave
  const absl::Status status = CheckHealth(absl::StrCat("127.0.0.1:", (*server)->started.port),
                                          absl::Seconds(5), TransportSecurity());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("NOT_SERVING"), absl::string_view::npos) << status;
}

TEST(HealthCheckTest, UnknownServiceIsNotFound) {
  auto server = StartHealthServer();
  ASSERT_TRUE(server.ok()) << server.status();
  const absl::Status status = CheckHealth(absl::StrCat("127.0.0.1:", (*server)->started.port),
                                          absl::Seconds(5), TransportSecurity(), "no.such.Service");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
}

TEST(HealthCheckTest, NothingListeningFailsWithinTheTimeout) {
  absl::StatusOr<int> port = launch::PickFreePort();  // free now, and nobody binds it
  ASSERT_TRUE(port.ok());
  const absl::Time start = absl::Now();
  const absl::Status status =
      CheckHealth(absl::StrCat("127.0.0.1:", *port), absl::Seconds(2), TransportSecurity());
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(status.code() == absl::StatusCode::kUnavailable ||
              status.code() == absl::StatusCode::kDeadlineExceeded)
      << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
}

TEST(HealthCheckTest, BadAddressIsInvalidArgument) {
  EXPECT_EQ(CheckHealth("no-port", absl::Seconds(1), TransportSecurity()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::cli
