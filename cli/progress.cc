#include "cli/progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "cli/report/format_units.h"

namespace ringside::cli {

std::string ProgressText(double steps, int64_t total_steps, double steps_per_second,
                         double bytes_per_second) {
  if (total_steps > 0 && steps >= static_cast<double>(total_steps)) {
    // The steps are done; what remains is rank 0's evaluator catching up and the result files.
    return absl::StrFormat("%d/%d steps done, finishing (evaluations, results)", total_steps,
                           total_steps);
  }
  return absl::StrFormat("%.0f/%d steps, %.1f steps/s, %s/s", steps, total_steps, steps_per_second,
                         HumanBytes(bytes_per_second));
}

PhaseProgress::PhaseProgress(std::string phase, int64_t total_steps, bool terminal,
                             std::ostream& out)
    : phase_(std::move(phase)), total_steps_(total_steps), terminal_(terminal), out_(out) {}

void PhaseProgress::Update(double steps, double bytes) {
  const absl::Duration since = absl::Now() - last_;
  if (since < (terminal_ ? absl::Milliseconds(250) : absl::Seconds(2))) return;
  const double seconds = absl::ToDoubleSeconds(since);
  const double steps_per_second = (steps - last_steps_) / seconds;
  const double bytes_per_second = (bytes - last_bytes_) / seconds;
  last_ = absl::Now();
  last_steps_ = steps;
  last_bytes_ = bytes;
  const double done = total_steps_ > 0 ? std::min(1.0, steps / total_steps_) : 0;
  const std::string rates = ProgressText(steps, total_steps_, steps_per_second, bytes_per_second);
  if (terminal_) {
    const int width = 30, filled = static_cast<int>(done * width);
    out_ << "\r" << phase_ << " [" << std::string(filled, '#') << std::string(width - filled, '.')
         << "] " << rates << "   " << std::flush;
    drawn_ = true;
  } else {
    out_ << phase_ << ": " << rates << "\n" << std::flush;
  }
}

void PhaseProgress::Break() {
  if (drawn_) out_ << "\n";
  drawn_ = false;
}

}  // namespace ringside::cli
