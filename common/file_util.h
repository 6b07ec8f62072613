// Whole-file reads and crash-safe writes: Ringside's one layer of POSIX file writes. A writer
// never leaves a half-written file at `path`: it writes a temporary file in the same directory,
// flushes it to disk, then renames it over `path` (atomic on POSIX file systems;
// AtomicFileWriter, which WriteFileAtomically and common/checkpoint_store.h use).
// Thread-safe (distinct paths). Errors: NOT_FOUND for a missing file; for any other I/O failure
// INTERNAL, or ErrnoStatus's code where a write says so; each naming the path and the system's
// reason.
#ifndef RINGSIDE_COMMON_FILE_UTIL_H_
#define RINGSIDE_COMMON_FILE_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ringside {

// The system's error `error` (an errno) on `what` `path` as a status with a code a caller can act
// on: NOT_FOUND (ENOENT), PERMISSION_DENIED (EACCES, EPERM, EROFS), RESOURCE_EXHAUSTED (ENOSPC,
// EDQUOT), else INTERNAL; the message is "WHAT PATH: the system's reason[; HINT]". Pass errno
// beside string views, never beside a StrCat, whose allocation could overwrite it first.
absl::Status ErrnoStatus(int error, absl::string_view what, absl::string_view path,
                         absl::string_view hint = "");

// `status` with "; HINT" after its message (OK stays OK).
absl::Status WithHint(const absl::Status& status, absl::string_view hint);

// Makes the directory's entries (a rename, a new file or subdirectory) survive a power loss.
absl::Status FsyncDirectory(const std::string& dir);

// A new file written under a temporary name, flushed to disk and only then renamed to its path:
// a reader, also after a crash, sees the old file or the new one whole, never a mix. The
// temporary is removed unless Commit succeeds. Errors: ErrnoStatus's, naming the file.
// Thread-compatible.
class AtomicFileWriter {
 public:
  // Creates `temporary` (in the directory of the final path) with permission bits `mode` (before
  // the umask). O_EXCL: a left-over file of that name (of a crashed writer) could have looser
  // permissions, and is never written through.
  static absl::StatusOr<AtomicFileWriter> Create(std::string temporary, mode_t mode);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // removes the temporary unless committed

  // Appends `size` bytes.
  absl::Status Append(const void* data, size_t size);
  absl::Status Append(absl::string_view bytes) { return Append(bytes.data(), bytes.size()); }
  // Flushes the file to disk and closes it (durable before it becomes visible), then renames it
  // to `path`. The rename is durable once the directory is flushed too (FsyncDirectory).
  absl::Status Commit(const std::string& path);

  const std::string& temporary() const { return temporary_; }

 private:
  AtomicFileWriter(int fd, std::string temporary) : fd_(fd), temporary_(std::move(temporary)) {}
  void Discard();

  int fd_ = -1;
  std::string temporary_;
  bool committed_ = false;
};

// `mode`: the new file's permission bits (before the umask); 0600 for secrets such as keys,
// which are never readable by others, not even for a moment.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 mode_t mode = 0644);
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A scratch file of a fixed size, which nothing reads after a crash (no flush to disk, no rename),
// written and read at offsets: pwrite and pread, so distinct ranges may be written from several
// threads at once. Not in the process's memory: what is written sits in the page cache, which the
// kernel may write out and drop. The test evaluator's snapshots of the parameters live in these
// (worker/accuracy_evaluator.h). Reads and writes past size() are INVALID_ARGUMENT.
class ScratchFile {
 public:
  // A new file at `path` (0600; an existing file is never written over) of `size` zero bytes.
  static absl::StatusOr<ScratchFile> Create(const std::string& path, uint64_t size);
  // An existing file, which must hold exactly `size` bytes (INVALID_ARGUMENT otherwise).
  static absl::StatusOr<ScratchFile> Open(const std::string& path, uint64_t size);
  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&& other) noexcept;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile();  // closes it; the file stays

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  absl::Status Write(uint64_t offset, absl::string_view bytes) const;
  absl::Status Read(uint64_t offset, absl::Span<char> out) const;

 private:
  ScratchFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  absl::Status CheckWithin(uint64_t offset, uint64_t length) const;

  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FILE_UTIL_H_
