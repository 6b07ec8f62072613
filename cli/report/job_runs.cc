#include "cli/report/job_runs.h"

#include "absl/strings/str_cat.h"

namespace ringside::cli {

std::string RunName(const ModeReport& run) {
  std::string name(SyncModeName(run.mode));
  if (run.colocated) name += " colocated";
  if (!run.variant.empty()) absl::StrAppend(&name, " ", run.variant);
  return name;
}

std::vector<const ModeReport*> JobRuns(const JobComparison& job) {
  std::vector<const ModeReport*> runs = {&job.ring};
  if (job.ps_variants.empty()) {
    runs.push_back(&job.ps);
  } else {
    for (const ModeReport& variant : job.ps_variants) runs.push_back(&variant);
  }
  if (job.ps_colocated.has_value()) runs.push_back(&*job.ps_colocated);
  for (const ModeReport& compressed : job.compression_variants) runs.push_back(&compressed);
  return runs;
}

}  // namespace ringside::cli
