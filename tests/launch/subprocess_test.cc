#include "launch/subprocess.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

// True when `pid` is no child of ours any more: reaped, so neither running nor a zombie.
bool IsReaped(pid_t pid) {
  int status;
  return waitpid(pid, &status, WNOHANG) == -1 && errno == ECHILD;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

launch::Subprocess SpawnOrDie(std::vector<std::string> argv, const std::string& log_path = "") {
  launch::SpawnOptions options;
  options.argv = std::move(argv);
  options.log_path = log_path;
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
  EXPECT_TRUE(process.ok()) << process.status();
  return std::move(process).value();
}

TEST(SubprocessTest, TrueExitsWithZero) {
  launch::Subprocess process = SpawnOrDie({"/bin/true"});
  absl::StatusOr<launch::ExitStatus> status = process.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->ok());
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_FALSE(process.running());
  EXPECT_TRUE(IsReaped(process.pid()));
}

// The peak resident memory comes from the kernel at reaping: a shell that holds a 48 MiB string
// reports at least that much, /bin/true far less.
TEST(SubprocessTest, ReportsPeakResidentMemory) {
  launch::Subprocess big =
      SpawnOrDie({"/bin/sh", "-c", "x=$(head -c 50331648 /dev/zero | tr '\\0' x); echo ${#x}"});
  launch::Subprocess small = SpawnOrDie({"/bin/true"});
  absl::StatusOr<launch::ExitStatus> big_status = big.Wait(absl::Seconds(60));
  absl::StatusOr<launch::ExitStatus> small_status = small.Wait(absl::Seconds(60));
  ASSERT_TRUE(big_status.ok()) << big_status.status();
  ASSERT_TRUE(small_status.ok()) << small_status.status();
  EXPECT_TRUE(big_status->ok()) << big_status->ToString();
  EXPECT_GE(big_status->peak_rss_bytes, int64_t{48} << 20);
  EXPECT_GT(small_status->peak_rss_bytes, 0);
  EXPECT_LT(small_status->peak_rss_bytes, int64_t{16} << 20);
}

TEST(SubprocessTest, ReportsExitCode) {
  launch::Subprocess process = SpawnOrDie({"/bin/sh", "-c", "exit 3"});
  absl::StatusOr<launch::ExitStatus> status = process.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->ok());
  EXPECT_EQ(status->exit_code, 3);
  EXPECT_EQ(status->signal, 0);
  EXPECT_EQ(status->ToString(), "exit code 3");
}

TEST(SubprocessTest, WaitTimesOutThenKillReaps) {
  launch::Subprocess process = SpawnOrDie({"/bin/sleep", "30"});
  const absl::Time start = absl::Now();
  absl::StatusOr<launch::ExitStatus> status = process.Wait(absl::Milliseconds(100));
  EXPECT_EQ(status.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(process.running());
  const launch::ExitStatus killed = process.Kill();
  EXPECT_EQ(killed.signal, SIGTERM);
  EXPECT_THAT(killed.ToString(), HasSubstr("SIGTERM"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_FALSE(process.running());
  EXPECT_TRUE(IsReaped(process.pid()));
  EXPECT_EQ(process.Kill().signal, SIGTERM);  // idempotent
}

TEST(SubprocessTest, KillEscalatesToSigkillWhenTermIsIgnored) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("subprocess-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions options;
  // Ignored dispositions survive exec, so sleep itself ignores SIGTERM (no grandchild left).
  options.argv = {"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 30"};
  options.log_path = dir->File("log");
  options.term_grace = absl::Milliseconds(200);
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
  ASSERT_TRUE(process.ok()) << process.status();
  // Wait for the trap to be in place (a condition with a deadline, not a fixed sleep).
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!absl::StrContains(ReadFile(options.log_path), "ready") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(process->Kill().signal, SIGKILL);
  EXPECT_TRUE(IsReaped(process->pid()));
}

TEST(SubprocessTest, DestructorKillsAndReaps) {
  pid_t pid = -1;
  {
    launch::Subprocess process = SpawnOrDie({"/bin/sleep", "30"});
    pid = process.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_TRUE(IsReaped(pid));
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(SubprocessTest, MoveTransfersOwnership) {
  launch::Subprocess a = SpawnOrDie({"/bin/sleep", "30"});
  const pid_t pid = a.pid();
  launch::Subprocess b = std::move(a);
  EXPECT_EQ(b.pid(), pid);
  EXPECT_TRUE(b.running());
  EXPECT_FALSE(a.running());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  b.Kill();
  EXPECT_TRUE(IsReaped(pid));
}

TEST(SubprocessTest, CapturesStdoutAndStderrInTheLog) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("subprocess-test-");
  ASSERT_TRUE(dir.ok());
  const std::string log = dir->File("child.log");
  launch::Subprocess process =
      SpawnOrDie({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; echo last"}, log);
  ASSERT_TRUE(process.Wait(absl::Seconds(30)).ok());
  EXPECT_EQ(process.log_path(), log);
  const std::string text = ReadFile(log);
  EXPECT_THAT(text, HasSubstr("to-stdout"));
  EXPECT_THAT(text, HasSubstr("to-stderr"));
  EXPECT_EQ(launch::TailOfFile(log, 1), "last");
  EXPECT_EQ(launch::TailOfFile(dir->File("missing"), 3), "");
}

TEST(SubprocessTest, PassesExtraEnvironment) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("subprocess-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo \"value=$RINGSIDE_SUBPROCESS_TEST\""};
  options.log_path = dir->File("log");
  options.extra_env = {"RINGSIDE_SUBPROCESS_TEST=42"};
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(process->Wait(absl::Seconds(30)).ok());
  EXPECT_THAT(ReadFile(options.log_path), HasSubstr("value=42"));
}

TEST(SubprocessTest, MissingProgramFailsAtSpawn) {
  launch::SpawnOptions options;
  options.argv = {"/nonexistent/ringside-program"};
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
  EXPECT_EQ(process.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(process.status().message(), HasSubstr("/nonexistent/ringside-program"));
  EXPECT_EQ(launch::Subprocess::Spawn(launch::SpawnOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WaitAllTest, SucceedsWhenAllExitZero) {
  launch::Subprocess a = SpawnOrDie({"/bin/true"});
  launch::Subprocess b = SpawnOrDie({"/bin/sh", "-c", "exit 0"});
  EXPECT_TRUE(launch::WaitAll({&a, &b}, absl::Seconds(30)).ok());
  EXPECT_TRUE(IsReaped(a.pid()));
  EXPECT_TRUE(IsReaped(b.pid()));
}

TEST(WaitAllTest, OneFailureKillsTheOthers) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("subprocess-test-");
  ASSERT_TRUE(dir.ok());
  launch::Subprocess sleeper = SpawnOrDie({"/bin/sleep", "30"});
  launch::Subprocess failing =
      SpawnOrDie({"/bin/sh", "-c", "echo something broke >&2; exit 3"}, dir->File("log"));
  const absl::Time start = absl::Now();
  const absl::Status status = launch::WaitAll({&sleeper, &failing}, absl::Seconds(60));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("exit code 3"));
  EXPECT_THAT(status.message(), HasSubstr("something broke"));
  EXPECT_TRUE(IsReaped(sleeper.pid()));
  EXPECT_TRUE(IsReaped(failing.pid()));
}

TEST(WaitAllTest, TimeoutKillsEverything) {
  launch::Subprocess a = SpawnOrDie({"/bin/sleep", "30"});
  launch::Subprocess b = SpawnOrDie({"/bin/true"});
  const absl::Status status = launch::WaitAll({&a, &b}, absl::Milliseconds(200));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr(std::to_string(a.pid())));
  EXPECT_TRUE(IsReaped(a.pid()));
  EXPECT_TRUE(IsReaped(b.pid()));
}

// What a report prints of a child's log: its last lines, blank ones skipped, each quoted with
// control characters escaped and cut, whatever the child wrote.
TEST(QuotedTailOfFileTest, QuotesEscapesAndCutsTheLastLines) {
  auto dir = launch::TempDir::Create("ringside-tail-test-");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("child.log");
  {
    std::ofstream out(path);
    for (int i = 0; i < 30; ++i) out << "line " << i << "\n";
    out << "\n   \n";
    out << "bell\a and tab\t\n";
    out << std::string(500, 'x') << "\n";
  }
  const std::vector<std::string> tail = launch::QuotedTailOfFile(path, 4, 10);
  ASSERT_EQ(tail.size(), 4u) << ::testing::PrintToString(tail);
  EXPECT_EQ(tail[0], "\"line 28\"");
  EXPECT_EQ(tail[1], "\"line 29\"");
  EXPECT_EQ(tail[2], "\"bell\\x07 and \"... (14 bytes)");
  EXPECT_EQ(tail[3], "\"xxxxxxxxxx\"... (500 bytes)");
  EXPECT_EQ(launch::QuotedTailOfFile(path).size(), static_cast<size_t>(launch::kLogTailLines));
  EXPECT_TRUE(launch::QuotedTailOfFile(dir->File("missing.log")).empty());
}

}  // namespace
}  // namespace ringside
