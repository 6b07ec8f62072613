#include "tests/support/worker_processes.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/await_file.h"
#include "launch/free_port.h"

namespace ringside::testing {

std::string BinDir() {
  const char* dir = std::getenv("RINGSIDE_BIN_DIR");
  return dir != nullptr ? dir : "";
}

std::string WorkerProcesses::ResultFile(int rank) const {
  return dir_->File(absl::StrCat("result-", rank, ".json"));
}

absl::StatusOr<std::unique_ptr<WorkerProcesses>> WorkerProcesses::Start(
    int world, const std::vector<std::string>& flags, const std::vector<std::string>& program,
    const std::map<int, std::vector<std::string>>& flags_of_rank) {
  if (BinDir().empty()) return absl::FailedPreconditionError("RINGSIDE_BIN_DIR is not set");
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-workers-"));
  std::unique_ptr<WorkerProcesses> workers(
      new WorkerProcesses(std::make_unique<launch::TempDir>(std::move(dir))));
  ASSIGN_OR_RETURN(const std::vector<int> ports, launch::PickFreePorts(world));
  std::vector<std::string> peers;
  for (int port : ports) peers.push_back(absl::StrCat("127.0.0.1:", port));
  const bool has_security = std::any_of(flags.begin(), flags.end(), [](const std::string& flag) {
    return flag.rfind("--tls_", 0) == 0 || flag == "--insecure";
  });
  for (int rank = 0; rank < world; ++rank) {
    launch::SpawnOptions options;
    options.argv = {BinDir() + "/" + program[0]};
    options.argv.insert(options.argv.end(), program.begin() + 1, program.end());
    options.argv.insert(
        options.argv.end(),
        {absl::StrCat("--rank=", rank), absl::StrCat("--peers=", absl::StrJoin(peers, ",")),
         absl::StrCat("--result_file=", workers->ResultFile(rank))});
    options.argv.insert(options.argv.end(), flags.begin(), flags.end());
    if (!has_security) options.argv.push_back("--insecure");
    if (auto it = flags_of_rank.find(rank); it != flags_of_rank.end()) {
      options.argv.insert(options.argv.end(), it->second.begin(), it->second.end());
    }
    options.log_path = workers->dir_->File(absl::StrCat("worker-", rank, ".log"));
    // civetweb (the metrics server) can take ~2 s to stop after a scrape; SIGKILL is a failure.
    options.term_grace = absl::Seconds(15);
    ASSIGN_OR_RETURN(launch::Subprocess process, launch::Subprocess::Spawn(options));
    workers->processes_.push_back(std::move(process));
  }
  return workers;
}

absl::StatusOr<std::vector<nlohmann::json>> WorkerProcesses::WaitForResults(
    absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  std::vector<nlohmann::json> results(processes_.size());
  for (size_t rank = 0; rank < processes_.size(); ++rank) {
    ASSIGN_OR_RETURN(std::string text,
                     launch::AwaitFileFrom(processes_[rank], ResultFile(static_cast<int>(rank)),
                                           absl::StrCat("worker ", rank),
                                           std::max(give_up - absl::Now(), absl::ZeroDuration()),
                                           /*log_lines=*/20));
    results[rank] = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  }
  return results;
}

absl::Status WorkerProcesses::WaitForExit(absl::Duration timeout) {
  std::vector<launch::Subprocess*> all;
  for (launch::Subprocess& process : processes_) all.push_back(&process);
  return launch::WaitAll(all, timeout);
}

}  // namespace ringside::testing
