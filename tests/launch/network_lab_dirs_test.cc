// A killed lab's directory of command logs (<tmp>/ringside-lab-<pid>-XXXXXX) is removed by the
// stale-lab cleanup once its pid is gone, and nothing else is: not a live process's, not another
// program's. Needs no root (no namespace is made).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "launch/network_lab.h"
#include "launch/temp_dir.h"

namespace ringside::launch {
namespace {

// The pid of a child that has exited and been reaped: no process has it (until the kernel
// hands it out again, which takes a whole turn of the pid space).
int DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return static_cast<int>(child);
}

TEST(NetworkLabDirectoriesTest, OnlyTheDirectoriesOfLabsWhoseProcessIsGoneAreRemoved) {
  absl::StatusOr<TempDir> base = TempDir::Create("lab-dirs-test-");
  ASSERT_TRUE(base.ok()) << base.status();
  const int dead = DeadPid();
  ASSERT_GT(dead, 0);
  const std::string stale = base->File(absl::StrCat("ringside-lab-", dead, "-a1b2c3"));
  const std::string stale_cleanup =
      base->File(absl::StrCat("ringside-lab-", dead, "-cleanup-d4e5f6"));
  const std::string live = base->File(absl::StrCat("ringside-lab-", getpid(), "-g7h8i9"));
  const std::string probe = base->File("ringside-lab-probeXyZ123");
  const std::string other = base->File("ringside-compare-123-abc");
  for (const std::string& dir : {stale, stale_cleanup, live, probe, other}) {
    ASSERT_TRUE(std::filesystem::create_directory(dir)) << dir;
  }
  ASSERT_TRUE(std::filesystem::create_directory(stale + "/logs"));

  std::vector<std::string> removed = NetworkLab::RemoveStaleDirectories(base->path());
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {stale, stale_cleanup};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_FALSE(std::filesystem::exists(stale_cleanup));
  for (const std::string& kept : {live, probe, other}) {
    EXPECT_TRUE(std::filesystem::is_directory(kept)) << kept;
  }
  // A base that is not there removes nothing.
  EXPECT_TRUE(NetworkLab::RemoveStaleDirectories(base->File("missing")).empty());
}

}  // namespace
}  // namespace ringside::launch
