#include "tests/support/poll.h"

#include "absl/strings/str_cat.h"

namespace ringside::testing {

absl::Status PollUntil(const std::function<bool()>& event, absl::Duration limit,
                       const std::function<std::optional<std::string>()>& gave_up) {
  const absl::Time deadline = absl::Now() + limit;
  while (!event()) {
    if (gave_up) {
      if (std::optional<std::string> why = gave_up()) return absl::AbortedError(*why);
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("not observed within ", absl::FormatDuration(limit)));
    }
    absl::SleepFor(absl::Milliseconds(10));  // the poll interval
  }
  return absl::OkStatus();
}

}  // namespace ringside::testing
