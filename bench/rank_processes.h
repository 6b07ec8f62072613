// What the ring and PS benchmark commands share: starting one process per rank from prepared
// argv lists (logs in the cell's directory), waiting for all of them under one timeout, and
// reading their RankResult files; finding this executable to re-run it as a rank; the progress
// line of each cell; and how a sweep ends (table, --json, exit code).
// Errors: as Subprocess::Spawn, WaitAll (naming the failing rank, with its log tail) and
// ReadRankResult. Thread-compatible.
#ifndef RINGSIDE_BENCH_RANK_PROCESSES_H_
#define RINGSIDE_BENCH_RANK_PROCESSES_H_

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/rank_result.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

namespace ringside::bench {

// Rank r runs `argvs[r]`, logs to dir/<log_prefix>-r.log and writes `result_files[r]`.
absl::StatusOr<std::vector<RankResult>> RunRankProcesses(
    const std::vector<std::vector<std::string>>& argvs,
    const std::vector<std::string>& result_files, const launch::TempDir& dir,
    const std::string& log_prefix, absl::Duration timeout);

// The path of the running executable (/proc/self/exe).
absl::StatusOr<std::string> SelfExecutable();

// Runs one cell (`run()` returns a result with a `status`) between a progress line on stderr,
// "ringside-bench: [3/12] <what> ... done in 1.234s", so a long sweep shows life.
template <typename Run>
auto RunWithProgress(int index, int total, const std::string& what, Run run) {
  std::cerr << absl::StrFormat("ringside-bench: [%d/%d] %s ... ", index, total, what);
  const absl::Time start = absl::Now();
  auto result = run();
  std::cerr << (result.status.ok() ? "done" : "FAILED") << " in "
            << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
            << "\n";
  return result;
}

// Prints `table` on stdout and, with a `json_path`, writes `json` there atomically. Returns the
// command's exit code: 0 when `all_ok`, else 1 (also when the JSON cannot be written, which
// `command` reports on stderr).
int FinishSweep(absl::string_view command, const std::string& table, bool all_ok,
                const std::string& json_path, const nlohmann::json& json);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_RANK_PROCESSES_H_
