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

namespace ringside {

// `mode`: the new file's permission bits (before the umask); 0600 for secrets such as keys,
// which are never readable by others, not even for a moment.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 mode_t mode = 0644);
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FILE_UTIL_H_
