// `ringside plan`'s probe (cli/cluster_probe_run.h) against real LinkProbe servers on loopback in
// this process: every figure of the file is measured (positive), a member that cannot be reached
// is named with the reason, and a caller without the probe's token is refused. A member's Profile
// RPC refuses a caller without the token, a request out of bounds and (with no profiler) any
// request, and a reply out of range is refused by the caller. No timing is asserted: only that
// each figure was measured.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cluster_probe_run.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/free_port.h"
#include "server/probe/link_probe.h"

namespace ringside::cli {
namespace {

ProbeOptions SmallProbe() {
  ProbeOptions options;
  options.links.repeats = 1;
  options.batch_rows = 4;
  options.model = "4,16,3";
  options.activation = "tanh";
  return options;
}

TEST(PlanProbeTest, MeasuresEveryFigureOnLoopback) {
  absl::StatusOr<ClusterProbe> probe = RunLoopbackProbe(SmallProbe(), 2);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->links.size(), 2u);
  for (const LinkProbe& link : probe->links) {
    EXPECT_GT(link.bytes_per_second, 0) << link.link;
    EXPECT_GE(link.latency_seconds, 0) << link.link;
  }
  EXPECT_EQ(probe->model, "4,16,3");
  EXPECT_GT(probe->costs.compute_seconds_per_sample, 0);
  EXPECT_GT(probe->costs.sync_cpu_seconds_per_byte, 0);
  EXPECT_GE(probe->costs.cores_per_process, 1);
  EXPECT_GT(probe->costs.shard_bytes_per_second, 0);
  // Every member is this process: the first link carries its profile.
  EXPECT_EQ(probe->links[0].device, "cpu");
  EXPECT_EQ(probe->links[0].compute_seconds_per_sample, probe->costs.compute_seconds_per_sample);
  EXPECT_GE(probe->links[0].usable_cores, probe->costs.cores_per_process);
  EXPECT_EQ(probe->device, "cpu");
  // The top-level link is the slowest member's.
  EXPECT_EQ(probe->costs.link_bytes_per_second,
            std::min(probe->links[0].bytes_per_second, probe->links[1].bytes_per_second));
}

TEST(PlanProbeTest, NamesAMemberThatCannotBeReached) {
  absl::StatusOr<int> port = launch::PickFreePort();
  ASSERT_TRUE(port.ok());
  ProbeOptions options = SmallProbe();
  const std::string member = absl::StrCat("127.0.0.1:", *port);
  options.members = {member};
  options.links.token = "t";
  options.links.timeout = absl::Seconds(5);
  absl::StatusOr<ClusterProbe> probe = RunClusterProbe(options);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kUnavailable) << probe.status();
  EXPECT_NE(probe.status().message().find("probe of member " + member + " failed: "),
            absl::string_view::npos)
      << probe.status();
}

TEST(PlanProbeTest, RefusesACallerWithoutTheToken) {
  probe::LinkProbeService service("the-token");
  absl::StatusOr<StartedServer> server =
      StartServer("127.0.0.1:0", {&service}, TransportSecurity::Plaintext());
  ASSERT_TRUE(server.ok()) << server.status();
  ProbeOptions options = SmallProbe();
  options.members = {absl::StrCat("127.0.0.1:", server->port)};
  options.links.token = "another";
  absl::StatusOr<ClusterProbe> probe = RunClusterProbe(options);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.status().code(), absl::StatusCode::kPermissionDenied) << probe.status();
}

// A member's probe service on loopback and a raw stub to it, so that requests the client would
// refuse reach the server.
class ProfileRpcTest : public ::testing::Test {
 protected:
  void Serve(probe::MemberProfiler profiler) {
    service_.emplace("the-token", std::move(profiler));
    absl::StatusOr<StartedServer> server =
        StartServer("127.0.0.1:0", {&*service_}, TransportSecurity::Plaintext());
    ASSERT_TRUE(server.ok()) << server.status();
    member_ = absl::StrCat("127.0.0.1:", server->port);
    server_.emplace(*std::move(server));
    stub_ = proto::LinkProbe::NewStub(MakeChannel(member_, TransportSecurity::Plaintext()));
  }
  grpc::Status Call(const proto::ProfileRequest& request, const std::string& token) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    context.AddMetadata(probe::kProbeTokenMetadata, token);
    proto::MemberProfile reply;
    return stub_->Profile(&context, request, &reply);
  }
  probe::LinkProbeOptions Links() const {
    probe::LinkProbeOptions links;
    links.token = "the-token";
    return links;
  }
  static proto::ProfileRequest GoodRequest() {
    proto::ProfileRequest request;
    request.set_model("4,16,3");
    request.set_activation("tanh");
    request.set_batch_rows(4);
    request.set_repeats(1);
    return request;
  }
  static proto::MemberProfile GoodProfile() {
    proto::MemberProfile profile;
    profile.set_device("cpu");
    profile.set_compute_seconds_per_sample(1e-5);
    profile.set_sync_cpu_seconds_per_byte(1e-9);
    profile.set_shard_bytes_per_second(1e9);
    profile.set_usable_cores(2);
    return profile;
  }
  const std::string& member() const { return member_; }

 private:
  std::optional<probe::LinkProbeService> service_;
  std::optional<StartedServer> server_;
  std::string member_;
  std::unique_ptr<proto::LinkProbe::Stub> stub_;
};

TEST_F(ProfileRpcTest, RefusesAWrongTokenAndRequestsOutOfBounds) {
  int profiled = 0;
  Serve([&profiled](const proto::ProfileRequest&) -> absl::StatusOr<proto::MemberProfile> {
    ++profiled;
    return GoodProfile();
  });
  EXPECT_EQ(Call(GoodRequest(), "another").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  std::vector<proto::ProfileRequest> bad(6, GoodRequest());
  bad[0].set_batch_rows(0);
  bad[1].set_batch_rows(probe::kMaxProfileBatchRows + 1);
  bad[2].set_repeats(0);
  bad[3].set_repeats(probe::kMaxProfileRepeats + 1);
  bad[4].set_model(std::string(probe::kMaxProfileModelChars + 1, '4'));
  bad[5].set_activation("");
  for (const proto::ProfileRequest& request : bad) {
    EXPECT_EQ(Call(request, "the-token").error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << request.DebugString();
  }
  EXPECT_EQ(profiled, 0);
  EXPECT_TRUE(Call(GoodRequest(), "the-token").ok());
  EXPECT_EQ(profiled, 1);
  absl::StatusOr<proto::MemberProfile> profile =
      probe::ProfileMember(member(), GoodRequest(), Links(), absl::Seconds(30));
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->device(), "cpu");
}

TEST_F(ProfileRpcTest, AMemberWithoutAProfilerSaysSo) {
  Serve(nullptr);
  EXPECT_EQ(Call(GoodRequest(), "the-token").error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(ProfileRpcTest, TheCallerRefusesAProfileOutOfRange) {
  proto::MemberProfile reply = GoodProfile();
  Serve([&reply](const proto::ProfileRequest&) -> absl::StatusOr<proto::MemberProfile> {
    return reply;
  });
  const auto refused = [&](const std::string& figure) {
    absl::StatusOr<proto::MemberProfile> profile =
        probe::ProfileMember(member(), GoodRequest(), Links(), absl::Seconds(30));
    ASSERT_FALSE(profile.ok()) << figure;
    EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument) << profile.status();
    EXPECT_NE(profile.status().message().find(figure), absl::string_view::npos) << profile.status();
  };
  reply.set_usable_cores(0);
  refused("usable_cores");
  reply = GoodProfile();
  reply.set_compute_seconds_per_sample(std::numeric_limits<double>::infinity());
  refused("compute_seconds_per_sample");
  reply = GoodProfile();
  reply.set_device(std::string(100, 'd'));
  refused("device");
}

TEST_F(ProfileRpcTest, AProfilersErrorReachesTheCaller) {
  Serve([](const proto::ProfileRequest&) -> absl::StatusOr<proto::MemberProfile> {
    return absl::InvalidArgumentError("model 4,x is not a model");
  });
  absl::StatusOr<proto::MemberProfile> profile =
      probe::ProfileMember(member(), GoodRequest(), Links(), absl::Seconds(30));
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument) << profile.status();
  EXPECT_NE(profile.status().message().find("4,x is not a model"), absl::string_view::npos)
      << profile.status();
}

}  // namespace
}  // namespace ringside::cli
