// Status helpers that Debian's Abseil 20220623 lacks: RETURN_IF_ERROR and ASSIGN_OR_RETURN.
// Header-only; thread-compatible (they only touch their arguments).
#ifndef RINGSIDE_COMMON_STATUS_MACROS_H_
#define RINGSIDE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RINGSIDE_CONCAT_INNER_(a, b) a##b
#define RINGSIDE_CONCAT_(a, b) RINGSIDE_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    const ::absl::Status ringside_status_ = (expr);      \
    if (!ringside_status_.ok()) return ringside_status_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns from a StatusOr or returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  RINGSIDE_ASSIGN_OR_RETURN_IMPL_(RINGSIDE_CONCAT_(ringside_statusor_, __LINE__), lhs, expr)

#define RINGSIDE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

namespace ringside {

// Prefixes a non-OK status's message with `context`, keeping its code; an empty context leaves
// the message as it is.
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok() || context.empty()) return status;
  return absl::Status(status.code(), std::string(context) + ": " + std::string(status.message()));
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STATUS_MACROS_H_
