// One phase's progress while `ringside compare` waits: on a terminal a bar redrawn in place,
// otherwise a plain line every few seconds; both with steps/s and the worker's payload bytes/s.
// Thread-compatible.
#ifndef RINGSIDE_CLI_PROGRESS_H_
#define RINGSIDE_CLI_PROGRESS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ringside::cli {

// "40/200 steps, 3.1 steps/s, 7.1 MiB/s"; once every step is done, that the run is finishing
// (rank 0's evaluations catch up after the last step), not "0.0 steps/s".
std::string ProgressText(double steps, int64_t total_steps, double steps_per_second,
                         double bytes_per_second);

class PhaseProgress {
 public:
  PhaseProgress(std::string phase, int64_t total_steps, bool terminal, std::ostream& out);
  // `steps` done and `bytes` sent so far by one worker.
  void Update(double steps, double bytes);
  // Ends the bar's line (a terminal); interleaved messages call it first.
  void Break();

 private:
  const std::string phase_;
  const int64_t total_steps_;
  const bool terminal_;
  std::ostream& out_;
  absl::Time last_ = absl::Now();
  double last_steps_ = 0;
  double last_bytes_ = 0;
  bool drawn_ = false;
};

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_PROGRESS_H_
