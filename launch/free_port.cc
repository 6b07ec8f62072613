#include "launch/free_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ringside::launch {
namespace {

// The lowest port picked: below it lie the well-known and registered services a developer's
// machine may run (8080, Prometheus' 9090, ...), whose ports are free until they start.
constexpr int kLowestPick = 20000;
constexpr int kSmallestWindow = 1000;

// An open socket bound to a port of 127.0.0.1; closes on destruction.
class BoundSocket {
 public:
  BoundSocket() = default;
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;
  BoundSocket(BoundSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ~BoundSocket() {
    if (fd_ >= 0) close(fd_);
  }

  // Binds `port` (0: the kernel's choice) and returns the bound port; -1 when `port` is in use
  // (EADDRINUSE), with no socket left open. No SO_REUSEADDR: a port some socket still holds,
  // in TIME_WAIT included, is not free for a server that might bind without it.
  absl::StatusOr<int> Bind(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Error("socket");
    sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      if (errno == EADDRINUSE && port != 0) {
        close(fd_);
        fd_ = -1;
        return -1;
      }
      return Error(absl::StrCat("bind 127.0.0.1:", port).c_str());
    }
    socklen_t length = sizeof(address);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return Error("getsockname");
    }
    return static_cast<int>(ntohs(address.sin_port));
  }

 private:
  static absl::Status Error(const char* call) {
    return absl::InternalError(absl::StrCat("PickFreePort: ", call, ": ", strerror(errno)));
  }

  int fd_ = -1;
};

std::string ReadEphemeralRange() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  std::stringstream text;
  text << file.rdbuf();
  return file ? text.str() : std::string();
}

}  // namespace

PortWindow PickWindow(absl::string_view ip_local_port_range) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(ip_local_port_range, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  int low = 0, high = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &low) ||
      !absl::SimpleAtoi(fields[1], &high) || low < 1 || high > 65535 || low > high ||
      low - kLowestPick < kSmallestWindow) {
    return PortWindow{};
  }
  return PortWindow{kLowestPick, low};
}

absl::StatusOr<std::vector<int>> PickFreePortsIn(const PortWindow& window, int count) {
  if (count < 0) return absl::InvalidArgumentError("PickFreePorts: negative count");
  std::vector<BoundSocket> sockets(count);
  std::vector<int> ports;
  const int size = window.end - window.first;
  // Each pick from a random start, so concurrent pickers (tests run in parallel) rarely
  // overlap; from there on in order, so one pick's ports are consecutive where they can be.
  int tried = 0;
  int next = size > 0 ? static_cast<int>(std::random_device{}() % static_cast<unsigned>(size)) : 0;
  for (BoundSocket& socket : sockets) {
    absl::StatusOr<int> port = -1;
    for (; tried < size && *port < 0; ++tried, next = (next + 1) % size) {
      port = socket.Bind(window.first + next);
      if (!port.ok()) return port.status();
    }
    if (*port < 0) port = socket.Bind(0);
    if (!port.ok()) return port.status();
    ports.push_back(*port);
  }
  return ports;
}

absl::StatusOr<std::vector<int>> PickFreePorts(int count) {
  return PickFreePortsIn(PickWindow(ReadEphemeralRange()), count);
}

absl::StatusOr<int> PickFreePort() {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts(1);
  if (!ports.ok()) return ports.status();
  return ports->front();
}

}  // namespace ringside::launch
