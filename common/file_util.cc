#include "common/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int error = errno;
  const std::string message = absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  // O_EXCL: a left-over temporary (of a crashed writer) could have looser permissions.
  std::remove(temp.c_str());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("create", temp);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status status = ErrnoError("write", temp);
      close(fd);
      std::remove(temp.c_str());
      return status;
    }
    written += static_cast<size_t>(n);
  }
  // Durable before it becomes visible: a crash leaves the old file or the new one, never a mix.
  if (fsync(fd) != 0 || close(fd) != 0) {
    absl::Status status = ErrnoError("flush", temp);
    std::remove(temp.c_str());
    return status;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoError("rename over", path);
    std::remove(temp.c_str());
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("open", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoError("read", path);
  return text.str();
}

}  // namespace ringside
