// Whole-file reads and crash-safe writes. A writer never leaves a half-written file at `path`:
// it writes a temporary file in the same directory, flushes it to disk, then renames it over
// `path` (atomic on POSIX file systems). Thread-safe (distinct paths).
// Errors: NOT_FOUND for a missing file to read; INTERNAL for any other I/O failure, naming the
// path and the system's reason.
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

// `mode`: the new file's permission bits (before the umask); 0600 for secrets such as keys,
// which are never readable by others, not even for a moment.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 mode_t mode = 0644);
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A scratch file of a fixed size, which nothing reads after a crash (no flush to disk, no rename),
// written and read at offsets: pwrite and pread, so distinct ranges may be written from several
// threads at once. Not in the process's memory: what is written sits in the page cache, which the
// kernel may write out and drop. The test evaluator's snapshots of the parameters live in these
// (worker/test_evaluator.h). Reads and writes past size() are INVALID_ARGUMENT.
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
