#include "launch/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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

TEST(PickWindowTest, BelowTheEphemeralRange) {
  const launch::PortWindow window = launch::PickWindow("32768\t60999\n");
  EXPECT_EQ(window.first, 20000);
  EXPECT_EQ(window.end, 32768);
  // Too few ports below the range, or text that is not a range: the kernel picks.
  for (const char* text : {"20999 60999", "1024 65535", "", "32768", "x 60999", "40000 30000",
                           "32768 70000", "32768 60999 1"}) {
    const launch::PortWindow empty = launch::PickWindow(text);
    EXPECT_EQ(empty.first, empty.end) << text;
  }
}

TEST(PickFreePortTest, PicksComeFromBelowThisMachinesEphemeralRange) {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  std::stringstream text;
  text << file.rdbuf();
  ASSERT_TRUE(file) << "this Linux test reads the kernel's ephemeral range";
  const launch::PortWindow window = launch::PickWindow(text.str());
  ASSERT_LT(window.first, window.end) << "range " << text.str() << " leaves no window";
  absl::StatusOr<std::vector<int>> ports = launch::PickFreePorts(8);
  ASSERT_TRUE(ports.ok()) << ports.status();
  for (const int port : *ports) {
    EXPECT_GE(port, window.first);
    EXPECT_LT(port, window.end);
  }
}

TEST(PickFreePortTest, APortInUseIsPassedOver) {
  // A window of one port: free, it is picked; held by a socket, the kernel picks instead.
  absl::StatusOr<std::vector<int>> free = launch::PickFreePorts(1);
  ASSERT_TRUE(free.ok()) << free.status();
  const launch::PortWindow one{free->front(), free->front() + 1};
  absl::StatusOr<std::vector<int>> picked = launch::PickFreePortsIn(one, 1);
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_EQ(picked->front(), one.first);

  const int held = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(held, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(one.first));
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(held, 1), 0);
  picked = launch::PickFreePortsIn(one, 2);
  close(held);
  ASSERT_TRUE(picked.ok()) << picked.status();
  ASSERT_EQ(picked->size(), 2u);
  EXPECT_NE(picked->at(0), one.first);
  EXPECT_NE(picked->at(1), one.first);
  EXPECT_NE(picked->at(0), picked->at(1));
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
