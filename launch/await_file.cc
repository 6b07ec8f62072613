#include "launch/await_file.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ringside {

absl::StatusOr<std::string> AwaitFileFrom(Subprocess& process, const std::string& path,
                                          absl::string_view who, absl::Duration timeout,
                                          int log_lines) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (absl::StatusOr<std::string> text = ReadFileToString(path); text.ok()) return text;
    if (std::optional<ExitStatus> exit = process.Poll(); exit.has_value()) {
      // It may have written the file just before exiting.
      if (absl::StatusOr<std::string> text = ReadFileToString(path); text.ok()) return text;
      return absl::InternalError(
          absl::StrCat(who, " exited (", exit->ToString(), ") without writing ", path,
                       "; last lines of its log:\n", TailOfFile(process.log_path(), log_lines)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(who, " did not write ", path, " within ", absl::FormatDuration(timeout),
                       "; last lines of its log:\n", TailOfFile(process.log_path(), log_lines)));
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

}  // namespace ringside
