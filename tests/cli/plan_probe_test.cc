// `ringside plan`'s probe (cli/cluster_probe_run.h) against real LinkProbe servers on loopback in
// this process: every figure of the file is measured (positive), a member that cannot be reached
// is named with the reason, and a caller without the probe's token is refused. No timing is
// asserted: only that each figure was measured.
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

}  // namespace
}  // namespace ringside::cli
