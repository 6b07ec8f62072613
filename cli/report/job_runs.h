// The runs of one job's comparison (the ring, the ps run or its --ps_variants, the colocated ps
// run, the --compression_variants runs) and the name each goes by in every rendering. Pure;
// thread-safe.
#ifndef RINGSIDE_CLI_REPORT_JOB_RUNS_H_
#define RINGSIDE_CLI_REPORT_JOB_RUNS_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli {

// A run's name in tables, charts, the lab's bound and the JSON: "ring", "ps", "ps colocated"
// (--colocate), "ps staleness=2" for a --ps_variants variant, "ring randomk:0.01" for a
// --compression_variants run.
std::string RunName(const ModeReport& run);

// The runs of a job: the ring, then each PS variant or its one PS run, then (--colocate) the
// colocated PS run, then each --compression_variants run.
std::vector<const ModeReport*> JobRuns(const JobComparison& job);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_JOB_RUNS_H_
