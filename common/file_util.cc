#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
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

// Writes all of `contents` to `fd` (of `path`, named in the error).
absl::Status WriteAll(int fd, absl::string_view contents, const std::string& path) {
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", path);
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  // O_EXCL: a left-over temporary (of a crashed writer) could have looser permissions.
  std::remove(temp.c_str());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("create", temp);
  if (absl::Status status = WriteAll(fd, contents, temp); !status.ok()) {
    close(fd);
    std::remove(temp.c_str());
    return status;
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

absl::Status WriteScratchFile(const std::string& path, absl::string_view contents) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", path);
  absl::Status status = WriteAll(fd, contents, path);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("close", path);
  if (!status.ok()) std::remove(path.c_str());
  return status;
}

absl::Status ReadFileInto(const std::string& path, absl::Span<char> out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path);
  absl::Status status;
  struct stat info;
  if (fstat(fd, &info) != 0) {
    status = ErrnoError("examine", path);
  } else if (static_cast<uint64_t>(info.st_size) != out.size()) {
    status = absl::InvalidArgumentError(
        absl::StrCat(path, " holds ", info.st_size, " bytes, not the ", out.size(), " expected"));
  }
  size_t done = 0;
  while (status.ok() && done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) status = ErrnoError("read", path);
    if (n == 0) status = absl::InternalError(absl::StrCat(path, " ended early"));
    if (n > 0) done += static_cast<size_t>(n);
  }
  close(fd);
  return status;
}

}  // namespace ringside
