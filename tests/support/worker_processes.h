// Test support: N real `ringside-worker` (or `ringside-bench ring-rank`) processes forming a
// static ring on loopback (free
// ports picked at run time), each writing a JSON result file; stopped by PID when the object
// dies. Requires RINGSIDE_BIN_DIR (set by ctest).
#ifndef RINGSIDE_TESTS_SUPPORT_WORKER_PROCESSES_H_
#define RINGSIDE_TESTS_SUPPORT_WORKER_PROCESSES_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

namespace ringside::testing {

class WorkerProcesses {
 public:
  // Starts `world` processes of `program` (a binary in RINGSIDE_BIN_DIR, then its leading
  // arguments) with `--rank --peers --result_file` plus `flags`, plus `flags_of_rank[r]` on r.
  // Plaintext (--insecure is added) unless `flags` has --tls_* (or --insecure) of its own.
  static absl::StatusOr<std::unique_ptr<WorkerProcesses>> Start(
      int world, const std::vector<std::string>& flags,
      const std::vector<std::string>& program = {"ringside-worker"},
      const std::map<int, std::vector<std::string>>& flags_of_rank = {});

  // Waits until every worker has written its result file (a worker that exits without one
  // fails the wait with its log's last lines), then returns the parsed results in rank order.
  absl::StatusOr<std::vector<nlohmann::json>> WaitForResults(absl::Duration timeout);
  // Waits for every process to exit with code 0.
  absl::Status WaitForExit(absl::Duration timeout);

  launch::Subprocess& process(int rank) { return processes_[rank]; }
  const launch::TempDir& dir() const { return *dir_; }

 private:
  WorkerProcesses(std::unique_ptr<launch::TempDir> dir) : dir_(std::move(dir)) {}
  std::string ResultFile(int rank) const;

  std::unique_ptr<launch::TempDir> dir_;
  std::vector<launch::Subprocess> processes_;
};

std::string BinDir();

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_WORKER_PROCESSES_H_
