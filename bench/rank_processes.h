// What the ring and PS benchmark cells share: starting one process per rank from prepared argv
// lists (logs in the cell's directory), waiting for all of them under one timeout, and reading
// their RankResult files; and finding this executable to re-run it as a rank.
// Errors: as Subprocess::Spawn, WaitAll (naming the failing rank, with its log tail) and
// ReadRankResult. Thread-compatible.
#ifndef RINGSIDE_BENCH_RANK_PROCESSES_H_
#define RINGSIDE_BENCH_RANK_PROCESSES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/rank_result.h"
#include "common/temp_dir.h"

namespace ringside::bench {

// Rank r runs `argvs[r]`, logs to dir/<log_prefix>-r.log and writes `result_files[r]`.
absl::StatusOr<std::vector<RankResult>> RunRankProcesses(
    const std::vector<std::vector<std::string>>& argvs,
    const std::vector<std::string>& result_files, const TempDir& dir, const std::string& log_prefix,
    absl::Duration timeout);

// The path of the running executable (/proc/self/exe).
absl::StatusOr<std::string> SelfExecutable();

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_RANK_PROCESSES_H_
