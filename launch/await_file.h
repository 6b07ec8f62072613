// Waiting for a file a child process writes: a daemon's ready file once it serves, a worker's
// result file once it has trained. The writers write atomically (common/file_util.h), so a file
// that exists is whole. A process announces these only through the file, so the wait polls
// (every 10 ms) while also watching the process: one that exits first fails the wait at once,
// with its log's last lines, instead of running out the clock. Thread-compatible.
#ifndef RINGSIDE_LAUNCH_AWAIT_FILE_H_
#define RINGSIDE_LAUNCH_AWAIT_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/cluster_files.h"
#include "launch/subprocess.h"

namespace ringside::launch {

// The text of `path` once `process` (called `who` in errors) has written it. INTERNAL when the
// process exits without writing it, DEADLINE_EXCEEDED after `timeout`; both quote the last
// `log_lines` lines of the process's log.
absl::StatusOr<std::string> AwaitFileFrom(Subprocess& process, const std::string& path,
                                          absl::string_view who, absl::Duration timeout,
                                          int log_lines = 10);

// A daemon's ready file (common/cluster_files.h), parsed. A ready file that does not parse is a
// bug of its writer: INVALID_ARGUMENT naming `who` and the file.
absl::StatusOr<ReadyFile> AwaitReadyFile(Subprocess& process, const std::string& path,
                                         absl::string_view who, absl::Duration timeout);

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_AWAIT_FILE_H_
