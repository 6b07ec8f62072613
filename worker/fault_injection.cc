#include "worker/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ringside::worker {
namespace {

constexpr const char* kPoints[] = {"assigned",  "switch",      "census",  "replay",
                                   "state",     "state_chunk", "load",    "barrier",
                                   "ring_step", "ring_bucket", "ps_push", "leave_sent"};

}  // namespace

absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view text) {
  FaultPlan plan;
  const size_t at = text.find('@');
  plan.point = std::string(text.substr(0, at));
  if (at != absl::string_view::npos &&
      (!absl::SimpleAtoi(text.substr(at + 1), &plan.after_step) || plan.after_step < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--fault_at: '", text.substr(at + 1, 32), "' is not a step count"));
  }
  for (const char* point : kPoints) {
    if (plan.point == point) return plan;
  }
  return absl::InvalidArgumentError(absl::StrCat("--fault_at: unknown point '",
                                                 text.substr(0, std::min<size_t>(at, 32)),
                                                 "'; known: ", absl::StrJoin(kPoints, ", ")));
}

FaultHook KillSelfAt(FaultPlan plan) {
  return [plan = std::move(plan)](absl::string_view point, int64_t completed) {
    if (!plan.FiresAt(point, completed)) return false;
    std::fprintf(stderr, "fault injection: SIGKILL at %s after %lld steps\n", plan.point.c_str(),
                 static_cast<long long>(completed));
    std::fflush(stderr);
    raise(SIGKILL);
    return true;  // not reached
  };
}

bool FaultPoints::LostAt(absl::string_view point) {
  if (!hook_ || !hook_(point, completed_)) return false;
  lost_at_ = std::string(point);
  return true;
}

absl::Status FaultPoints::LostStatus() const {
  return absl::AbortedError(absl::StrCat("fault injection: this worker is lost at '", lost_at_,
                                         "' after ", completed_, " steps"));
}

}  // namespace ringside::worker
