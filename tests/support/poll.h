// Waiting in multi-process tests for something another process makes observable (a file, a
// metric, a log line): there is no event to block on, so it is polled. The limit only guards
// against a hang; it never paces the test.
#ifndef RINGSIDE_TESTS_SUPPORT_POLL_H_
#define RINGSIDE_TESTS_SUPPORT_POLL_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace ringside::testing {

// Polls `event` until it holds (OK). ABORTED with its text as soon as `gave_up` (may be null,
// polled too) returns one, e.g. a process that died; DEADLINE_EXCEEDED after `limit`.
absl::Status PollUntil(const std::function<bool()>& event, absl::Duration limit,
                       const std::function<std::optional<std::string>()>& gave_up = nullptr);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_POLL_H_
