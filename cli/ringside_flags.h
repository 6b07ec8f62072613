// The `ringside` command's flags (defined in cli/ringside_flags.cc, part of the binary only) and
// what each command reads from them. Every function checks every value it reads before anything
// starts: INVALID_ARGUMENT (or the data's own code) with a one-line message naming the flag.
#ifndef RINGSIDE_CLI_RINGSIDE_FLAGS_H_
#define RINGSIDE_CLI_RINGSIDE_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/commands.h"

// ctl and health read these directly.
ABSL_DECLARE_FLAG(std::string, controller);
ABSL_DECLARE_FLAG(std::string, operator_token_file);
ABSL_DECLARE_FLAG(std::string, address);
ABSL_DECLARE_FLAG(absl::Duration, timeout);
ABSL_DECLARE_FLAG(bool, cleanup);
// plan reads these too (cli/plan_flags.cc).
ABSL_DECLARE_FLAG(std::string, workers);
ABSL_DECLARE_FLAG(std::string, ps_shards);
ABSL_DECLARE_FLAG(std::string, link_rate);
ABSL_DECLARE_FLAG(std::string, json);
ABSL_DECLARE_FLAG(std::string, probe);
ABSL_DECLARE_FLAG(std::string, probe_out);
ABSL_DECLARE_FLAG(int64_t, ps_window_bytes);

namespace ringside::cli {

// What plain `compare` runs, for its --help.
extern const char kCompareJobs[];

// compare and lab: the comparison the flags describe (lab's link rates aside). `argc`/`argv`
// are the command line as given: which training flags were given picks the jobs.
absl::StatusOr<CompareOptions> CompareOptionsFromFlags(int argc, char** argv);
// lab: --link_rate (required) and --slow_link (repeatable) into `options`.
absl::Status LabRatesFromFlags(int argc, char** argv, CompareOptions& options);
// up: its one cluster and job, which trains until stopped unless --steps is given.
absl::StatusOr<UpOptions> UpOptionsFromFlags(int argc, char** argv);
// Where a command will write, checked before anything starts: the directory must exist and be
// writable, and the path must not be a directory. INVALID_ARGUMENT naming `flag`.
absl::Status CheckOutputPath(const char* flag, const std::string& path);
// plan (cli/plan_flags.cc): the job, the cluster sizes and where the costs come from.
absl::StatusOr<PlanOptions> PlanOptionsFromFlags(int argc, char** argv);
// Whether lab's flags were given: compare and up refuse them, which taken silently would let a
// user believe the links were shaped.
bool LabFlagsGiven(int argc, char** argv);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_RINGSIDE_FLAGS_H_
