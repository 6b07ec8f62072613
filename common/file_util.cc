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
#include "common/status_macros.h"

namespace ringside {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int error = errno;
  const std::string message = absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

// Writes all of `contents` to `fd` (of `path`, named in the error) from byte `offset` on.
absl::Status WriteAllAt(int fd, uint64_t offset, absl::string_view contents,
                        const std::string& path) {
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = pwrite(fd, contents.data() + written, contents.size() - written,
                             static_cast<off_t>(offset + written));
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
  if (absl::Status status = WriteAllAt(fd, 0, contents, temp); !status.ok()) {
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

absl::StatusOr<ScratchFile> ScratchFile::Create(const std::string& path, uint64_t size) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", path);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    absl::Status status = ErrnoError("size", path);
    close(fd);
    std::remove(path.c_str());
    return status;
  }
  return ScratchFile(fd, path, size);
}

absl::StatusOr<ScratchFile> ScratchFile::Open(const std::string& path, uint64_t size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path);
  ScratchFile file(fd, path, size);
  struct stat info;
  if (fstat(fd, &info) != 0) return ErrnoError("examine", path);
  if (static_cast<uint64_t>(info.st_size) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " holds ", info.st_size, " bytes, not the ", size, " expected"));
  }
  return file;
}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), size_(other.size_) {}

ScratchFile& ScratchFile::operator=(ScratchFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    size_ = other.size_;
  }
  return *this;
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status ScratchFile::CheckWithin(uint64_t offset, uint64_t length) const {
  if (offset > size_ || length > size_ - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes [", offset, ", +", length, ") of ", path_, ", which holds ", size_));
  }
  return absl::OkStatus();
}

absl::Status ScratchFile::Write(uint64_t offset, absl::string_view bytes) const {
  RETURN_IF_ERROR(CheckWithin(offset, bytes.size()));
  return WriteAllAt(fd_, offset, bytes, path_);
}

absl::Status ScratchFile::Read(uint64_t offset, absl::Span<char> out) const {
  RETURN_IF_ERROR(CheckWithin(offset, out.size()));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", path_);
    if (n == 0) return absl::InternalError(absl::StrCat(path_, " ended early (truncated?)"));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace ringside
