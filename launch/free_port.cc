#include "launch/free_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace ringside::launch {
namespace {

// An open socket bound to 127.0.0.1:0; closes on destruction.
class BoundSocket {
 public:
  BoundSocket() = default;
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;
  BoundSocket(BoundSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ~BoundSocket() {
    if (fd_ >= 0) close(fd_);
  }

  // Returns the bound port.
  absl::StatusOr<int> Bind() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Error("socket");
    sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      return Error("bind 127.0.0.1:0");
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

}  // namespace

absl::StatusOr<int> PickFreePort() {
  BoundSocket socket;
  return socket.Bind();
}

absl::StatusOr<std::vector<int>> PickFreePorts(int count) {
  if (count < 0) return absl::InvalidArgumentError("PickFreePorts: negative count");
  std::vector<BoundSocket> sockets(count);
  std::vector<int> ports;
  for (BoundSocket& socket : sockets) {
    absl::StatusOr<int> port = socket.Bind();
    if (!port.ok()) return port.status();
    ports.push_back(*port);
  }
  return ports;
}

}  // namespace ringside::launch
