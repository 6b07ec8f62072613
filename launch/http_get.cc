#include "launch/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringside::launch {

absl::StatusOr<std::string> HttpGet(int port, const std::string& path, absl::Duration timeout) {
  return HttpGet("127.0.0.1", port, path, timeout);
}

absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                    absl::Duration timeout) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("'", host, "' is not an IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string response;
  absl::Status status;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    status = absl::UnavailableError(
        absl::StrCat("connect to ", host, ":", port, ": ", std::strerror(errno)));
  } else {
    const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, "\r\n\r\n");
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      status = absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    }
    char buffer[65536];
    while (status.ok()) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) break;
      if (n < 0) {
        status = absl::DeadlineExceededError(absl::StrCat("recv: ", std::strerror(errno)));
      } else {
        response.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  const size_t body = response.find("\r\n\r\n");
  if (!absl::StartsWith(response, "HTTP/1.") || body == std::string::npos ||
      response.substr(9, 3) != "200") {
    return absl::InternalError(absl::StrCat("bad HTTP response: ", response.substr(0, 200)));
  }
  return response.substr(body + 4);
}

}  // namespace ringside::launch
