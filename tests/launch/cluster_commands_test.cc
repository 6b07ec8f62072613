// The command lines LocalCluster runs (launch/cluster_commands.h) name only flags the binaries
// have: each binary's --helpfull lists every flag it takes (the same source the doc-command
// check reads), and every --flag of the controller's, a shard's and a worker's command line,
// with every option that adds a flag turned on, must be among them. A flag renamed in a daemon
// fails here rather than in a cluster that never comes up.
#include "launch/cluster_commands.h"

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/certificates.h"
#include "launch/local_cluster.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "tests/support/training_options_sample.h"
#include "tests/support/worker_processes.h"

namespace ringside::launch {
namespace {

// The flags `binary --helpfull` lists ("  --name=DEFAULT" lines).
std::set<std::string> FlagsOf(const std::string& binary, const TempDir& dir) {
  SpawnOptions spawn;
  spawn.argv = {absl::StrCat(testing::BinDir(), "/", binary), "--helpfull"};
  spawn.log_path = dir.File(binary + ".help");
  absl::StatusOr<Subprocess> process = Subprocess::Spawn(spawn);
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return {};
  absl::StatusOr<ExitStatus> exit = process->Wait(absl::Seconds(60));
  EXPECT_TRUE(exit.ok() && exit->ok()) << binary << " --helpfull did not exit 0";
  const std::string help = ReadFileToString(spawn.log_path).value_or("");
  std::set<std::string> flags;
  const std::regex line(R"(^  --([a-z0-9_]+)=)", std::regex::multiline);
  for (auto it = std::sregex_iterator(help.begin(), help.end(), line); it != std::sregex_iterator();
       ++it) {
    flags.insert((*it)[1]);
  }
  EXPECT_GT(flags.size(), 5u) << binary << " --helpfull listed no flags:\n" << help;
  return flags;
}

// Every argument after argv[0] is a --flag=value that `binary` has, and argv[0] is `binary`.
void ExpectOnlyFlagsOf(const std::string& binary, const std::vector<std::string>& argv,
                       const TempDir& dir) {
  SCOPED_TRACE(binary);
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], absl::StrCat(testing::BinDir(), "/", binary));
  const std::set<std::string> flags = FlagsOf(binary, dir);
  for (size_t i = 1; i < argv.size(); ++i) {
    ASSERT_TRUE(absl::StartsWith(argv[i], "--")) << "not a flag: " << argv[i];
    const std::string name = argv[i].substr(2, argv[i].find('=') - 2);
    EXPECT_EQ(flags.count(name), 1u)
        << binary << " has no flag --" << name << " (" << argv[i] << ")";
  }
}

// Every option that adds a flag is on: checkpoints, the job's every setting, mutual TLS.
LocalClusterOptions EverythingOn(const TempDir& dir) {
  LocalClusterOptions options;
  options.bin_dir = testing::BinDir();
  options.dir = dir.path();
  options.checkpoint_dir = dir.File("checkpoints");
  options.checkpoint_every = 5;
  options.training = testing::NonDefaultTrainingOptions();
  return options;
}

ClusterShared SharedOf(const LocalClusterOptions& options) {
  return {options.bin_dir, options.dir + "/join-token", options.dir + "/operator-token",
          "127.0.0.1:5000"};
}

ProcessPlace PlaceWithTls(int port) {
  ProcessPlace place;
  place.port = port;
  place.metrics_port = port + 1;
  place.security_flags = CertificateAuthority::Flags({"ca.pem", "cert.pem", "key.pem"});
  return place;
}

TEST(ClusterCommandsTest, WorkersShareTheCoresForBlasAtLeastOneEach) {
  EXPECT_EQ(BlasThreadsPerWorker(/*cores=*/2, /*workers=*/4), 1);
  EXPECT_EQ(BlasThreadsPerWorker(16, 4), 4);
  EXPECT_EQ(BlasThreadsPerWorker(16, 3), 5);
  EXPECT_EQ(BlasThreadsPerWorker(8, 1), 8);
  EXPECT_EQ(BlasThreadsPerWorker(1, 0), 1);
}

// --colocate: shard i is placed on worker i's host; nothing else moves.
TEST(ClusterCommandsTest, ColocatedShardsRunOnTheirWorkersHost) {
  EXPECT_EQ(HostNameOf("ps-3", /*colocate_shards=*/true), "worker-3");
  EXPECT_EQ(HostNameOf("ps-0", true), "worker-0");
  EXPECT_EQ(HostNameOf("worker-2", true), "worker-2");
  EXPECT_EQ(HostNameOf("controller", true), "controller");
  EXPECT_EQ(HostNameOf("ps-3", false), "ps-3");
}

TEST(ClusterCommandsTest, TheControllersCommandNamesOnlyItsFlags) {
  absl::StatusOr<TempDir> dir = TempDir::Create("ringside-commands-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const LocalClusterOptions options = EverythingOn(*dir);
  const std::vector<std::string> argv =
      ControllerCommand(options, SharedOf(options), PlaceWithTls(5000));
  ExpectOnlyFlagsOf(kControllerBinary, argv, *dir);
  // The job's settings are there, for the controller to hand out; the member's are not.
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--optimizer=momentum"), 1);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--device=cuda:1"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--checkpoint_every=5"), 1);
}

TEST(ClusterCommandsTest, AShardsCommandNamesOnlyItsFlags) {
  absl::StatusOr<TempDir> dir = TempDir::Create("ringside-commands-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const LocalClusterOptions options = EverythingOn(*dir);
  ExpectOnlyFlagsOf(kShardBinary,
                    ShardCommand(options, SharedOf(options), "ps-1", PlaceWithTls(5002)), *dir);
}

TEST(ClusterCommandsTest, AWorkersCommandNamesOnlyItsFlags) {
  absl::StatusOr<TempDir> dir = TempDir::Create("ringside-commands-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const LocalClusterOptions options = EverythingOn(*dir);
  const std::vector<std::string> argv =
      WorkerCommand(options, SharedOf(options), "worker-3", PlaceWithTls(0));
  ExpectOnlyFlagsOf(kWorkerBinary, argv, *dir);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--device=cuda:1"), 1);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--optimizer=momentum"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(),
                       "--result_file=" + WorkerFiles(dir->path(), "worker-3").result),
            1);
}

// The check itself: a flag the binary lacks is found.
TEST(ClusterCommandsTest, AFlagTheBinaryLacksIsNotInItsList) {
  absl::StatusOr<TempDir> dir = TempDir::Create("ringside-commands-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::set<std::string> flags = FlagsOf(kShardBinary, *dir);
  EXPECT_EQ(flags.count("controller"), 1u);
  EXPECT_EQ(flags.count("device"), 1u);  // the shard links the training flags
  EXPECT_EQ(flags.count("checkpoint_dir"), 0u);
  EXPECT_EQ(flags.count("result_file"), 0u);
}

}  // namespace
}  // namespace ringside::launch
