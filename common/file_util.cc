#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

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

absl::Status ErrnoStatus(int error, absl::string_view what, absl::string_view path,
                         absl::string_view hint) {
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(error));
  if (!hint.empty()) absl::StrAppend(&message, "; ", hint);
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status WithHint(const absl::Status& status, absl::string_view hint) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), "; ", hint));
}

absl::Status FsyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open directory", dir);
  if (fsync(fd) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, "cannot flush to disk the directory", dir);
  }
  if (close(fd) != 0) return ErrnoStatus(errno, "cannot flush to disk the directory", dir);
  return absl::OkStatus();
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(std::string temporary, mode_t mode) {
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", temporary);
  return AtomicFileWriter(fd, std::move(temporary));
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      temporary_(std::move(other.temporary_)),
      committed_(std::exchange(other.committed_, true)) {}

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& other) noexcept {
  if (this != &other) {
    Discard();
    fd_ = std::exchange(other.fd_, -1);
    temporary_ = std::move(other.temporary_);
    committed_ = std::exchange(other.committed_, true);
  }
  return *this;
}

AtomicFileWriter::~AtomicFileWriter() { Discard(); }

void AtomicFileWriter::Discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!committed_) unlink(temporary_.c_str());
  committed_ = true;
}

absl::Status AtomicFileWriter::Append(const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most about 2 GiB a call; ask for 1 GiB at a time.
    const ssize_t n = write(fd_, bytes, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "cannot write", temporary_);
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit(const std::string& path) {
  // Durable before it becomes visible: a crash leaves the old file or the new one, never a mix.
  const int fd = std::exchange(fd_, -1);
  if (fsync(fd) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, "cannot flush to disk", temporary_);
  }
  if (close(fd) != 0) return ErrnoStatus(errno, "cannot flush to disk", temporary_);
  if (rename(temporary_.c_str(), path.c_str()) != 0) {
    const int error = errno;
    return ErrnoStatus(error, "cannot rename", absl::StrCat(temporary_, " to ", path));
  }
  committed_ = true;
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  // A left-over temporary (of a crashed writer) goes first: the writer never opens one.
  std::remove(temp.c_str());
  ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(temp, mode));
  RETURN_IF_ERROR(file.Append(contents));
  return file.Commit(path);
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
