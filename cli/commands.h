// The `ringside` command's subcommands (cli/ringside_main.cc parses flags and dispatches).
//   compare  runs the same job(s) on a local cluster in ring mode and in ps mode and reports
//            (table on stdout, --json, --report HTML). A worker that dies is reported and the
//            run goes on with the survivors; a controller or shard that dies stops everything
//            (non-zero exit naming it). Every child is stopped by PID, also on SIGINT/SIGTERM.
//   up       starts a local cluster and keeps it until SIGINT/SIGTERM, printing every
//            process's metrics URL (and writing them to --ready_file).
#ifndef RINGSIDE_CLI_COMMANDS_H_
#define RINGSIDE_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/termination_signals.h"
#include "train/local_training.h"

namespace ringside::cli {

struct ClusterFlags {
  std::string bin_dir;
  int workers = 4;
  int ps_shards = 2;
  absl::Duration heartbeat_timeout = absl::Seconds(2);
  std::string work_dir;  // empty: a fresh temporary directory, removed at the end
};

struct CompareOptions {
  ClusterFlags cluster;
  std::vector<worker::TrainingOptions> jobs;
  std::string json_file;
  std::string report_file;
};

struct UpOptions {
  ClusterFlags cluster;
  SyncMode mode = SyncMode::kRing;
  worker::TrainingOptions job;
  std::string ready_file;
};

absl::Status RunCompare(const CompareOptions& options, const TerminationSignals& signals,
                        std::ostream& out);
absl::Status RunUp(const UpOptions& options, const TerminationSignals& signals, std::ostream& out);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMMANDS_H_
