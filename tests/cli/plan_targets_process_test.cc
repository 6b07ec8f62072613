// `ringside plan --probe_targets` against real probe members: `ringside-worker
// --probe_token_file` processes serving only the link probe on loopback, one under mutual TLS,
// and a worker of a job, which serves it beside its ring. The probe file names each member's
// link and holds every figure measured, each member's profile of itself with its link; a wrong
// secret, a member that is gone and a worker that cannot serve the probe are refused, each naming
// what and why. No timing is asserted.
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/await_file.h"
#include "launch/certificates.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

constexpr absl::Duration kStart = absl::Seconds(30);

struct Ran {
  launch::ExitStatus exit;
  std::string log;
};

Ran RunToEnd(const launch::TempDir& dir, const std::string& name,
             const std::vector<std::string>& argv) {
  launch::SpawnOptions spawn;
  spawn.argv = argv;
  spawn.log_path = dir.File(name + ".log");
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return {{}, std::string(process.status().message())};
  absl::StatusOr<launch::ExitStatus> exit = process->Wait(absl::Seconds(120));
  if (!exit.ok()) return {process->Kill(), "did not end: " + std::string(exit.status().message())};
  return {*exit, ReadFileToString(spawn.log_path).value_or("")};
}

// A probe member: ringside-worker with --probe_token_file and no cluster, its address once ready.
struct Member {
  launch::Subprocess process;
  std::string address;
};

absl::StatusOr<Member> StartMember(const launch::TempDir& dir, const std::string& name,
                                   const std::vector<std::string>& security) {
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside-worker", "--probe_token_file=" + dir.File("token"),
                "--listen=127.0.0.1:0", "--ready_file=" + dir.File(name + ".ready")};
  spawn.argv.insert(spawn.argv.end(), security.begin(), security.end());
  spawn.log_path = dir.File(name + ".log");
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  absl::StatusOr<ReadyFile> ready =
      launch::AwaitReadyFile(*process, dir.File(name + ".ready"), name, kStart);
  if (!ready.ok()) return ready.status();
  return Member{*std::move(process), absl::StrCat("127.0.0.1:", ready->port)};
}

std::vector<std::string> Plan(const launch::TempDir& dir, const std::string& targets,
                              const std::string& token_file) {
  return {testing::BinDir() + "/ringside",
          "plan",
          "--model=4,16,3",
          "--workers=4",
          "--ps_shards=1",
          "--probe_targets=" + targets,
          "--probe_token_file=" + token_file};
}

class PlanTargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<launch::TempDir> made = launch::TempDir::Create("ringside-plan-targets-");
    ASSERT_TRUE(made.ok()) << made.status();
    dir_.emplace(*std::move(made));
    ASSERT_TRUE(WriteFileAtomically(dir_->File("token"), "the-secret\n", 0600).ok());
    ASSERT_TRUE(WriteFileAtomically(dir_->File("wrong-token"), "another\n", 0600).ok());
  }
  const launch::TempDir& dir() const { return *dir_; }

 private:
  std::optional<launch::TempDir> dir_;
};

TEST_F(PlanTargetsTest, ProbesEachMemberAndWritesItsLinks) {
  absl::StatusOr<Member> a = StartMember(dir(), "a", {"--insecure"});
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<Member> b = StartMember(dir(), "b", {"--insecure"});
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<std::string> plan = Plan(dir(), a->address + "," + b->address, dir().File("token"));
  plan.insert(plan.end(), {"--insecure", "--probe_out=" + dir().File("probe.json")});
  const Ran ran = RunToEnd(dir(), "plan", plan);
  ASSERT_TRUE(ran.exit.ok()) << ran.exit.ToString() << "\n" << ran.log;
  EXPECT_NE(ran.log.find("probing the links to 2 members"), std::string::npos) << ran.log;
  const nlohmann::json probe =
      nlohmann::json::parse(ReadFileToString(dir().File("probe.json")).value());
  ASSERT_EQ(probe["links"].size(), 2u) << probe.dump();
  EXPECT_EQ(probe["links"][0]["link"], "probe->" + a->address);
  EXPECT_EQ(probe["links"][1]["link"], "probe->" + b->address);
  // Each member profiled itself: its device, a sample's compute and its cores.
  bool slowest_named = false;
  for (const nlohmann::json& link : probe["links"]) {
    EXPECT_GT(link["bytes_per_second"].get<double>(), 0) << link.dump();
    EXPECT_FALSE(link.value("device", "").empty()) << link.dump();
    EXPECT_GT(link.value("compute_seconds_per_sample", 0.0), 0) << link.dump();
    EXPECT_GT(link.value("usable_cores", 0.0), 0) << link.dump();
    slowest_named |= link.value("compute_seconds_per_sample", 0.0) ==
                         probe["compute_seconds_per_sample"].get<double>() &&
                     link.value("device", "") == probe["device"];
  }
  EXPECT_TRUE(slowest_named) << "the costs are the slowest member's: " << probe.dump();
  EXPECT_EQ(probe["model"], "4,16,3");
  // A member stops cleanly on SIGTERM.
  ASSERT_EQ(kill(a->process.pid(), SIGTERM), 0);
  absl::StatusOr<launch::ExitStatus> exit = a->process.Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->ok()) << exit->ToString();
}

TEST_F(PlanTargetsTest, ProbesAMemberUnderMutualTls) {
  absl::StatusOr<launch::CertificateAuthority> ca =
      launch::CertificateAuthority::Create(dir().path());
  ASSERT_TRUE(ca.ok()) << ca.status();
  absl::StatusOr<TlsFiles> member_files = ca->Issue("member");
  absl::StatusOr<TlsFiles> planner_files = ca->Issue("planner");
  ASSERT_TRUE(member_files.ok() && planner_files.ok());
  absl::StatusOr<Member> member =
      StartMember(dir(), "member", launch::CertificateAuthority::Flags(*member_files));
  ASSERT_TRUE(member.ok()) << member.status();
  std::vector<std::string> plan = Plan(dir(), member->address, dir().File("token"));
  for (std::string& flag : launch::CertificateAuthority::Flags(*planner_files)) {
    plan.push_back(std::move(flag));
  }
  const Ran ran = RunToEnd(dir(), "plan-tls", plan);
  EXPECT_TRUE(ran.exit.ok()) << ran.exit.ToString() << "\n" << ran.log;
  // Without a certificate the member's TLS server refuses the link; the member is named.
  std::vector<std::string> plaintext = Plan(dir(), member->address, dir().File("token"));
  plaintext.push_back("--insecure");
  const Ran refused = RunToEnd(dir(), "plan-plaintext", plaintext);
  EXPECT_FALSE(refused.exit.ok()) << refused.log;
  EXPECT_NE(refused.log.find("probe of member " + member->address + " failed"), std::string::npos)
      << refused.log;
}

TEST_F(PlanTargetsTest, AWrongSecretAndAMemberThatIsGoneAreNamed) {
  absl::StatusOr<Member> member = StartMember(dir(), "member", {"--insecure"});
  ASSERT_TRUE(member.ok()) << member.status();
  std::vector<std::string> wrong = Plan(dir(), member->address, dir().File("wrong-token"));
  wrong.push_back("--insecure");
  const Ran denied = RunToEnd(dir(), "plan-wrong", wrong);
  EXPECT_EQ(denied.exit.exit_code, 1) << denied.log;
  EXPECT_NE(denied.log.find("probe of member " + member->address + " failed: no probe token"),
            std::string::npos)
      << denied.log;

  const std::string gone = member->address;
  member->process.Kill();
  std::vector<std::string> unreachable = Plan(dir(), gone, dir().File("token"));
  unreachable.push_back("--insecure");
  const Ran missing = RunToEnd(dir(), "plan-gone", unreachable);
  EXPECT_EQ(missing.exit.exit_code, 1) << missing.log;
  EXPECT_NE(missing.log.find("probe of member " + gone + " failed"), std::string::npos)
      << missing.log;
}

// A worker of a job given --probe_token_file trains as ever, and serves the probe on its RingPeer
// server: probed once its job is done and it lingers.
TEST_F(PlanTargetsTest, AWorkerOfAJobServesTheProbeBesideItsRing) {
  absl::StatusOr<std::unique_ptr<testing::WorkerProcesses>> workers =
      testing::WorkerProcesses::Start(
          2, {"--steps=2", "--linger", "--probe_token_file=" + dir().File("token")},
          {"ringside-worker"}, {{0, {"--ready_file=" + dir().File("worker-0.ready")}}});
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::StatusOr<std::vector<nlohmann::json>> results = (*workers)->WaitForResults(kStart * 4);
  ASSERT_TRUE(results.ok()) << results.status();
  absl::StatusOr<std::string> text = ReadFileToString(dir().File("worker-0.ready"));
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ReadyFile> ready = ParseReadyFile(*text);
  ASSERT_TRUE(ready.ok()) << ready.status();
  std::vector<std::string> plan =
      Plan(dir(), absl::StrCat("127.0.0.1:", ready->port), dir().File("token"));
  plan.push_back("--insecure");
  const Ran ran = RunToEnd(dir(), "plan-worker", plan);
  EXPECT_TRUE(ran.exit.ok()) << ran.exit.ToString() << "\n" << ran.log;
  EXPECT_NE(ran.log.find("probing the links to 1 members"), std::string::npos) << ran.log;
}

TEST_F(PlanTargetsTest, AProbeMemberNeedsAnAddressAndItsSecret) {
  const Ran no_listen = RunToEnd(dir(), "no-listen",
                                 {testing::BinDir() + "/ringside-worker",
                                  "--probe_token_file=" + dir().File("token"), "--insecure"});
  EXPECT_EQ(no_listen.exit.exit_code, 1) << no_listen.log;
  EXPECT_NE(no_listen.log.find("give --listen=HOST:PORT"), std::string::npos) << no_listen.log;
  const Ran no_file = RunToEnd(
      dir(), "no-file",
      {testing::BinDir() + "/ringside-worker", "--probe_token_file=" + dir().File("missing"),
       "--listen=127.0.0.1:0", "--insecure"});
  EXPECT_EQ(no_file.exit.exit_code, 1) << no_file.log;
  EXPECT_NE(no_file.log.find("--probe_token_file"), std::string::npos) << no_file.log;
}

}  // namespace
}  // namespace ringside
