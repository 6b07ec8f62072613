// WriteMergedTimeline (cli/compare_run.h): `ringside compare --timeline=FILE`.
#include <algorithm>
#include <limits>

#include "cli/compare_run.h"
#include "common/file_util.h"

namespace ringside::cli {

absl::Status WriteMergedTimeline(const std::vector<worker::TimelineProcess>& processes,
                                 const std::string& path) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const worker::TimelineProcess& process : processes) {
    for (const worker::TimelineEvent& event : process.events) {
      origin = std::min(origin, event.start_us);
    }
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  return WriteFileAtomically(path, worker::ChromeTraceText(processes, origin));
}

}  // namespace ringside::cli
