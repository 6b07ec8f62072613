// LocalCluster reports every process that ends without being asked to with the last lines of its
// log, quoted, and where the whole log is (issue 23: a worker that exited 1 after sitting at
// step 0 left nothing that said why). Real daemons, each made to end in a way that writes a
// known line first: a bad flag at start, the stall's own exit (a failed regroup that no new
// generation cures), a shard killed, a controller killed and restarted.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "launch/local_cluster.h"
#include "launch/temp_dir.h"
#include "tests/support/poll.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using launch::LocalCluster;
using launch::ProcessEnd;

// Only bounds a hang: every wait below ends on an event.
constexpr absl::Duration kLimit = absl::Seconds(90);

launch::LocalClusterOptions Options(const launch::TempDir& dir, int workers, int shards,
                                    SyncMode mode) {
  launch::LocalClusterOptions options;
  options.bin_dir = testing::BinDir();
  options.dir = dir.path();
  options.workers = workers;
  options.ps_shards = shards;
  options.mode = mode;
  options.training.model = "4,16,3";
  options.training.steps = 100000000;  // runs until the test stops it
  options.tls = false;
  return options;
}

// True when one of `lines` (quoted log lines) contains `text`.
bool AnyLineHas(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return absl::StrContains(line, text); });
}

void ExpectQuotedAndKept(const ProcessEnd& end) {
  ASSERT_FALSE(end.last_lines.empty()) << end.Describe();
  EXPECT_LE(end.last_lines.size(), static_cast<size_t>(launch::kLogTailLines));
  for (const std::string& line : end.last_lines) {
    EXPECT_EQ(line.front(), '"') << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  EXPECT_TRUE(std::filesystem::exists(end.log)) << end.log;
  EXPECT_TRUE(absl::StrContains(end.Describe(), end.last_lines.back())) << end.Describe();
  EXPECT_TRUE(absl::StrContains(end.Describe(), end.log)) << end.Describe();
}

TEST(LocalClusterReportTest, AWorkerThatFailsAtStartIsReportedWithItsLastLogLines) {
  auto dir = launch::TempDir::Create("ringside-report-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 1, 1, SyncMode::kPs);
  options.flags_of_worker[0] = {"--timeline_file=" + dir->File("t.json"), "--timeline_capacity=1"};
  auto cluster = LocalCluster::Start(options);
  ASSERT_FALSE(cluster.ok());
  const std::string message(cluster.status().message());
  EXPECT_TRUE(absl::StrContains(message, "worker-0 exited (exit code 1)")) << message;
  EXPECT_TRUE(absl::StrContains(message, dir->File("worker-0.log"))) << message;
  // The worker's own last words, quoted on a line of their own.
  EXPECT_TRUE(absl::StrContains(message,
                                "\n    \"ringside-worker: INVALID_ARGUMENT: "
                                "--timeline_capacity=1"))
      << message;
}

// The stall's way out: a regroup that fails (here: a ps generation with no shard) and no new
// generation within --regroup_timeout end the worker with exit code 1. Its last line says why.
TEST(LocalClusterReportTest, AWorkerThatExitsIsReportedWithItsLastLogLines) {
  auto dir = launch::TempDir::Create("ringside-report-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 1, 0, SyncMode::kPs);
  options.worker_flags = {"--regroup_timeout=100ms"};
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const auto results = (*cluster)->WaitForResults(kLimit);
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kUnavailable) << results.status();
  const std::vector<ProcessEnd> lost = (*cluster)->TakeLostWorkerReports();
  ASSERT_EQ(lost.size(), 1u);
  const ProcessEnd& worker = lost[0];
  EXPECT_EQ(worker.name, "worker-0");
  EXPECT_EQ(worker.how, "exit code 1");
  EXPECT_EQ(worker.log, dir->File("worker-0.log"));
  ExpectQuotedAndKept(worker);
  EXPECT_TRUE(AnyLineHas(worker.last_lines, "no new generation came within 100ms"))
      << worker.Describe();
  EXPECT_TRUE(AnyLineHas(worker.last_lines, "has no shard left")) << worker.Describe();
  EXPECT_TRUE(absl::StrContains(worker.Summary(), "worker-0 (pid ")) << worker.Summary();
  EXPECT_TRUE((*cluster)->TakeLostWorkerReports().empty()) << "reported once";
}

TEST(LocalClusterReportTest, AKilledShardIsReportedWithItsLastLogLines) {
  auto dir = launch::TempDir::Create("ringside-report-test-");
  ASSERT_TRUE(dir.ok());
  auto cluster = LocalCluster::Start(Options(*dir, 1, 1, SyncMode::kPs));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::ClusterProcess& shard = *(*cluster)->processes()[1];
  ASSERT_EQ(shard.name, "ps-0");
  ASSERT_EQ(kill(shard.process.pid(), SIGKILL), 0);
  ASSERT_TRUE(shard.process.Wait(kLimit).ok());
  const std::optional<ProcessEnd> dead = (*cluster)->DeadChild();
  ASSERT_TRUE(dead.has_value());
  EXPECT_EQ(dead->name, "ps-0");
  EXPECT_TRUE(absl::StartsWith(dead->how, "killed by signal 9")) << dead->how;
  ExpectQuotedAndKept(*dead);
  // Written before its ready file, so before the kill.
  EXPECT_TRUE(AnyLineHas(dead->last_lines, "ps: registered with the controller"))
      << dead->Describe();
  const auto results = (*cluster)->WaitForResults(kLimit);
  ASSERT_FALSE(results.ok());
  EXPECT_TRUE(absl::StrContains(results.status().message(), "ps: registered with the controller"))
      << results.status();
}

// `ringside up`'s restart report carries the dead server's last lines, from its kept log.
TEST(LocalClusterReportTest, ARestartReportQuotesTheDeadServersKeptLog) {
  auto dir = launch::TempDir::Create("ringside-report-test-");
  ASSERT_TRUE(dir.ok());
  launch::LocalClusterOptions options = Options(*dir, 1, 1, SyncMode::kRing);
  options.restart_servers = true;
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::ClusterProcess& controller = (*cluster)->controller();
  ASSERT_EQ(kill(controller.process.pid(), SIGKILL), 0);
  ASSERT_TRUE(controller.process.Wait(kLimit).ok());
  std::vector<std::string> reports;
  const absl::Status restarted = testing::PollUntil(
      [&] {
        if (!(*cluster)->RestartDeadServers().ok()) return false;
        for (std::string& report : (*cluster)->TakeRestartReports()) reports.push_back(report);
        return !reports.empty();
      },
      kLimit);
  ASSERT_TRUE(restarted.ok()) << restarted;
  const std::string kept = dir->File("controller.log.1");
  EXPECT_TRUE(std::filesystem::exists(kept));
  EXPECT_TRUE(absl::StrContains(reports[0], "last lines of its log (" + kept + "):\n    \""))
      << reports[0];
}

}  // namespace
}  // namespace ringside
