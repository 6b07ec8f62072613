#include "launch/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

TEST(PickFreePortTest, ReturnsABindablePort) {
  absl::StatusOr<int> port = launch::PickFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_LT(*port, 65536);
  EXPECT_TRUE(CanBind(*port));
}

TEST(PickFreePortTest, ManyPortsAreDistinct) {
  absl::StatusOr<std::vector<int>> ports = launch::PickFreePorts(16);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 16u);
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 16u);
  EXPECT_TRUE(launch::PickFreePorts(0)->empty());
  EXPECT_FALSE(launch::PickFreePorts(-1).ok());
}

TEST(TempDirTest, CreatesAndRemoves) {
  std::string path;
  {
    absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("temp-dir-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = dir->path();
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_EQ(dir->File("x"), path + "/x");
    std::filesystem::create_directory(dir->File("sub"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDirTest, KeepLeavesTheDirectory) {
  std::string path;
  {
    absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("temp-dir-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = dir->path();
    dir->Keep();
  }
  EXPECT_TRUE(std::filesystem::is_directory(path));
  std::filesystem::remove_all(path);
}

}  // namespace
}  // namespace ringside
