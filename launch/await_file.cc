#include "launch/await_file.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ringside::launch {
namespace {

// The last `lines` lines of `process`'s log, quoted, one per line below the message.
std::string LogTail(const Subprocess& process, int lines) {
  std::string tail = absl::StrCat("; last lines of its log (", process.log_path(), "):");
  for (const std::string& line : QuotedTailOfFile(process.log_path(), lines)) {
    absl::StrAppend(&tail, "\n    ", line);
  }
  return tail;
}

}  // namespace

absl::StatusOr<std::string> AwaitFileFrom(Subprocess& process, const std::string& path,
                                          absl::string_view who, absl::Duration timeout,
                                          int log_lines) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (absl::StatusOr<std::string> text = ReadFileToString(path); text.ok()) return text;
    if (std::optional<ExitStatus> exit = process.Poll(); exit.has_value()) {
      // It may have written the file just before exiting.
      if (absl::StatusOr<std::string> text = ReadFileToString(path); text.ok()) return text;
      return absl::InternalError(absl::StrCat(who, " exited (", exit->ToString(),
                                              ") without writing ", path,
                                              LogTail(process, log_lines)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(who, " did not write ", path, " within ",
                                                      absl::FormatDuration(timeout),
                                                      LogTail(process, log_lines)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

absl::StatusOr<ReadyFile> AwaitReadyFile(Subprocess& process, const std::string& path,
                                         absl::string_view who, absl::Duration timeout) {
  ASSIGN_OR_RETURN(std::string text, AwaitFileFrom(process, path, who, timeout));
  absl::StatusOr<ReadyFile> ready = ParseReadyFile(text);
  if (!ready.ok()) return Annotate(ready.status(), absl::StrCat(who, "'s ", path));
  return ready;
}

}  // namespace ringside::launch
