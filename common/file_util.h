// Whole-file reads and crash-safe writes. A writer never leaves a half-written file at `path`:
// it writes a temporary file in the same directory, flushes it to disk, then renames it over
// `path` (atomic on POSIX file systems). Thread-safe (distinct paths).
// Errors: NOT_FOUND for a missing file to read; INTERNAL for any other I/O failure, naming the
// path and the system's reason.
#ifndef RINGSIDE_COMMON_FILE_UTIL_H_
#define RINGSIDE_COMMON_FILE_UTIL_H_

#include <sys/types.h>

#include <string>

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

// Scratch files, which nothing reads after a crash (no flush to disk, no rename): `contents`
// written whole to `path` (a new file, 0600), and read back into exactly `out`
// (INVALID_ARGUMENT when the file's size differs).
absl::Status WriteScratchFile(const std::string& path, absl::string_view contents);
absl::Status ReadFileInto(const std::string& path, absl::Span<char> out);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FILE_UTIL_H_
