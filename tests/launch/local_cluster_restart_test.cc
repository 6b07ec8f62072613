// LocalCluster as an orchestrator (restart_servers): a controller or shard killed with SIGKILL
// comes back with the same command line at the same address, seen only from outside (its ready
// file written again with the same port, the gRPC health service SERVING there); a process that
// keeps dying is given up on with an error naming it.
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/health_check.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/cluster_commands.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "tests/support/poll.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using launch::ClusterProcess;
using launch::LocalCluster;

// Only bounds a hang: every wait below ends on an event.
constexpr absl::Duration kLimit = absl::Seconds(90);

launch::LocalClusterOptions Options(const launch::TempDir& dir, int workers, int shards) {
  launch::LocalClusterOptions options;
  options.bin_dir = testing::BinDir();
  options.dir = dir.path();
  options.workers = workers;
  options.ps_shards = shards;
  options.training.model = "4,16,3";
  options.training.steps = 100000000;  // runs until the test stops it
  options.heartbeat_timeout = absl::Seconds(1);
  options.restart_servers = true;
  return options;
}

// Polls `event` while pumping the cluster's restarts, as `ringside up` does; giving up (a crash
// loop) ends the wait with that error.
absl::Status RestartingUntil(LocalCluster& cluster, const std::function<bool()>& event) {
  return testing::PollUntil(event, kLimit, [&]() -> std::optional<std::string> {
    const absl::Status status = cluster.RestartDeadServers();
    if (status.ok()) return std::nullopt;
    return status.ToString();
  });
}

std::string Logs(LocalCluster& cluster) {
  std::string logs;
  for (auto& process : cluster.processes()) {
    logs += absl::StrCat("--- ", process->name, ":\n",
                         launch::TailOfFile(process->process.log_path(), 8));
  }
  return logs;
}

// Kills `server` with SIGKILL and checks, from outside, that a new process serves at the same
// address: the restart is reported, then the ready file appears again with the same port and
// the gRPC health check there answers SERVING.
void ExpectRestartedAtTheSameAddress(LocalCluster& cluster, ClusterProcess& server) {
  const int port = server.port;
  const std::string address = absl::StrCat("127.0.0.1:", port);
  const pid_t killed = server.process.pid();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(cli::CheckHealth(address, absl::Seconds(10), cluster.client_security()).ok());
  ASSERT_EQ(kill(killed, SIGKILL), 0);

  // Other members may die of the loss and be restarted too: find this one's report.
  const std::string died = absl::StrCat(server.name, " (pid ", killed, ") killed by signal 9");
  std::vector<std::string> reports;
  std::string report;
  absl::Status seen = RestartingUntil(cluster, [&] {
    for (std::string& each : cluster.TakeRestartReports()) {
      if (each.rfind(died, 0) == 0) report = each;
      reports.push_back(std::move(each));
    }
    return !report.empty();
  });
  ASSERT_TRUE(seen.ok()) << "no restart of " << server.name << ": " << seen
                         << "\nreports: " << absl::StrJoin(reports, "\n") << "\n"
                         << Logs(cluster);
  EXPECT_NE(report.find("restarted it as pid"), std::string::npos) << report;
  EXPECT_NE(report.find(address), std::string::npos) << report;

  // The restart removed the old ready file, so one that parses was written by a replacement.
  seen = RestartingUntil(cluster, [&] {
    absl::StatusOr<std::string> text = ReadFileToString(server.ready_file);
    if (!text.ok()) return false;
    absl::StatusOr<ReadyFile> ready = ParseReadyFile(*text);
    return ready.ok() && ready->port == port && ready->metrics_port == server.metrics_port;
  });
  ASSERT_TRUE(seen.ok()) << server.name << " did not write " << server.ready_file
                         << " again with port " << port << ": " << seen
                         << "\nreports: " << absl::StrJoin(reports, "\n") << "\n"
                         << Logs(cluster);
  absl::Status health;
  seen = RestartingUntil(cluster, [&] {
    health = cli::CheckHealth(address, absl::Seconds(2), cluster.client_security());
    return health.ok();
  });
  EXPECT_TRUE(seen.ok()) << "the health check at " << address
                         << " never answered SERVING: " << health << "\n"
                         << Logs(cluster);
  EXPECT_NE(server.process.pid(), killed);
}

TEST(LocalClusterRestartTest, AKilledControllerComesBackAtItsAddressWithItsCheckpointFlags) {
  auto dir = launch::TempDir::Create("ringside-restart-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 2, 1);
  options.checkpoint_dir = dir->File("state/checkpoints");  // created by Start
  options.checkpoint_every = 10;
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ClusterProcess& controller = (*cluster)->controller();
  EXPECT_TRUE(std::filesystem::is_directory(options.checkpoint_dir));
  const std::vector<std::string>& command = controller.command;
  for (const std::string& flag :
       {"--checkpoint_dir=" + options.checkpoint_dir, std::string("--checkpoint_every=10"),
        absl::StrCat("--listen=127.0.0.1:", controller.port)}) {
    EXPECT_NE(std::find(command.begin(), command.end(), flag), command.end())
        << flag << " not in " << absl::StrJoin(command, " ");
  }
  ExpectRestartedAtTheSameAddress(**cluster, controller);
}

TEST(LocalClusterRestartTest, AKilledShardComesBackAtItsAddress) {
  auto dir = launch::TempDir::Create("ringside-restart-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 2, 2);
  // Until the controller forgets the killed shard (a heartbeat timeout), it may refuse a second
  // registration at that address and the replacement exits: that is restarted again, so the
  // guard must not count those few restarts as a crash loop here.
  options.max_restarts = 1000;
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ClusterProcess& shard = *(*cluster)->processes()[1];
  ASSERT_EQ(shard.name, "ps-0");
  ExpectRestartedAtTheSameAddress(**cluster, shard);
}

TEST(LocalClusterRestartTest, AControllerThatKeepsDyingIsGivenUpOnNamingIt) {
  auto dir = launch::TempDir::Create("ringside-restart-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 1, 0);
  options.max_restarts = 3;
  options.restart_window = absl::InfiniteDuration();  // every restart counts, however slow
  options.restart_backoff = absl::Milliseconds(10);
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;
  // Every replacement, run with the same command line, now exits at once: its join token file
  // is gone. The running members read it at their start only.
  ASSERT_EQ(std::remove(dir->File("join-token").c_str()), 0);
  ASSERT_EQ(kill(c.controller().process.pid(), SIGKILL), 0);

  absl::Status gave_up;
  ASSERT_TRUE(testing::PollUntil(
                  [&] {
                    gave_up = c.RestartDeadServers();
                    return !gave_up.ok();
                  },
                  kLimit)
                  .ok())
      << Logs(c);
  EXPECT_EQ(gave_up.code(), absl::StatusCode::kAborted) << gave_up;
  const std::string message(gave_up.message());
  EXPECT_NE(message.find(
                absl::StrCat("gave up restarting controller at 127.0.0.1:", c.controller().port)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("after 3 restarts"), std::string::npos) << message;
  EXPECT_NE(message.find("crash loop"), std::string::npos) << message;
  EXPECT_NE(message.find("--join_token_file"), std::string::npos)
      << "the error quotes the log that says why: " << message;
  EXPECT_EQ(c.TakeRestartReports().size(), 3u);
  EXPECT_FALSE(c.controller().process.running());
  EXPECT_EQ(c.RestartDeadServers(), gave_up) << "giving up is final";
  EXPECT_TRUE(c.TakeRestartReports().empty());
}

// Every worker is started with its share of the cores for OpenBLAS, or the value the user set.
TEST(LocalClusterTest, WorkersShareTheCoresAmongTheirBlasThreads) {
  auto dir = launch::TempDir::Create("ringside-blas-test-");
  ASSERT_TRUE(dir.ok());
  auto cluster = LocalCluster::Start(Options(*dir, 2, 1));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  const char* user = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string expected = absl::StrCat(
      "OPENBLAS_NUM_THREADS=", user != nullptr ? user
                                               : absl::StrCat(launch::BlasThreadsPerWorker(
                                                     CPU_COUNT(&cpus), /*workers=*/2)));
  for (ClusterProcess* worker : (*cluster)->workers()) {
    absl::StatusOr<std::string> environ =
        ReadFileToString(absl::StrCat("/proc/", worker->process.pid(), "/environ"));
    ASSERT_TRUE(environ.ok()) << environ.status();
    const std::vector<std::string> entries = absl::StrSplit(*environ, '\0');
    EXPECT_NE(std::find(entries.begin(), entries.end(), expected), entries.end())
        << worker->name << " lacks " << expected;
  }
}

}  // namespace
}  // namespace ringside
