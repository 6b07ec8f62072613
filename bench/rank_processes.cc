#include "bench/rank_processes.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/subprocess.h"

namespace ringside::bench {

absl::StatusOr<std::vector<RankResult>> RunRankProcesses(
    const std::vector<std::vector<std::string>>& argvs,
    const std::vector<std::string>& result_files, const launch::TempDir& dir,
    const std::string& log_prefix, absl::Duration timeout) {
  std::vector<launch::Subprocess> processes;
  for (size_t rank = 0; rank < argvs.size(); ++rank) {
    launch::SpawnOptions options;
    options.argv = argvs[rank];
    options.log_path = dir.File(absl::StrCat(log_prefix, "-", rank, ".log"));
    ASSIGN_OR_RETURN(launch::Subprocess process, launch::Subprocess::Spawn(options));
    processes.push_back(std::move(process));
  }
  std::vector<launch::Subprocess*> pointers;
  for (launch::Subprocess& process : processes) pointers.push_back(&process);
  RETURN_IF_ERROR(launch::WaitAll(pointers, timeout));
  std::vector<RankResult> ranks;
  for (const std::string& file : result_files) {
    ASSIGN_OR_RETURN(RankResult rank_result, ReadRankResult(file));
    ranks.push_back(rank_result);
  }
  return ranks;
}

absl::StatusOr<std::string> SelfExecutable() {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) return absl::InternalError("cannot read /proc/self/exe");
  return std::string(buffer.data(), static_cast<size_t>(n));
}

int FinishSweep(absl::string_view command, const std::string& table, bool all_ok,
                const std::string& json_path, const nlohmann::json& json) {
  std::cout << table << std::flush;
  if (!json_path.empty()) {
    if (absl::Status status = WriteFileAtomically(json_path, json.dump(2) + "\n"); !status.ok()) {
      std::cerr << "ringside-bench " << command << ": --json: " << status.message() << "\n";
      return 1;
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace ringside::bench
