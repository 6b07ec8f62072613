#include "launch/cluster_commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/training_options.h"

namespace ringside::launch {
namespace {

// --listen and --metrics_listen at `at`, then its security flags.
void AppendPlace(const ProcessPlace& at, std::vector<std::string>& argv) {
  argv.push_back(absl::StrCat("--listen=", at.host, ":", at.port));
  argv.push_back(absl::StrCat("--metrics_listen=", at.host, ":", at.metrics_port));
  argv.insert(argv.end(), at.security_flags.begin(), at.security_flags.end());
}

void Append(std::vector<std::string> flags, std::vector<std::string>& argv) {
  for (std::string& flag : flags) argv.push_back(std::move(flag));
}

}  // namespace

std::string ReadyFileOf(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name, ".ready");
}

WorkerFiles::WorkerFiles(const std::string& dir, const std::string& name)
    : ready(ReadyFileOf(dir, name)),
      result(absl::StrCat(dir, "/", name, ".result.json")),
      trace(absl::StrCat(dir, "/", name, ".trace.jsonl")),
      evaluations(absl::StrCat(dir, "/", name, ".eval.jsonl")),
      params(absl::StrCat(dir, "/", name, ".params")) {}

std::vector<std::string> ControllerCommand(const LocalClusterOptions& options,
                                           const ClusterShared& shared, const ProcessPlace& at) {
  std::vector<std::string> argv = {
      absl::StrCat(shared.bin_dir, "/", kControllerBinary),
      absl::StrCat("--workers=", options.workers),
      absl::StrCat("--ps_shards=", options.ps_shards),
      absl::StrCat("--mode=", SyncModeName(options.mode)),
      "--join_token_file=" + shared.token_file,
      "--operator_token_file=" + shared.operator_token_file,
      absl::StrCat("--heartbeat_timeout=", absl::FormatDuration(options.heartbeat_timeout)),
      "--ready_file=" + ReadyFileOf(options.dir, "controller")};
  AppendPlace(at, argv);
  if (!options.checkpoint_dir.empty()) argv.push_back("--checkpoint_dir=" + options.checkpoint_dir);
  if (options.checkpoint_every > 0) {
    argv.push_back(absl::StrCat("--checkpoint_every=", options.checkpoint_every));
  }
  Append(TrainingOptionsArgv(options.training, TrainingOptionScope::kJob), argv);
  return argv;
}

std::vector<std::string> ShardCommand(const LocalClusterOptions& options,
                                      const ClusterShared& shared, const std::string& name,
                                      const ProcessPlace& at) {
  std::vector<std::string> argv = {
      absl::StrCat(shared.bin_dir, "/", kShardBinary), "--controller=" + shared.controller,
      "--join_token_file=" + shared.token_file, "--ready_file=" + ReadyFileOf(options.dir, name)};
  AppendPlace(at, argv);
  return argv;
}

std::vector<std::string> WorkerCommand(const LocalClusterOptions& options,
                                       const ClusterShared& shared, const std::string& name,
                                       const ProcessPlace& at) {
  const WorkerFiles files(options.dir, name);
  std::vector<std::string> argv = {
      absl::StrCat(shared.bin_dir, "/", kWorkerBinary),
      "--controller=" + shared.controller,
      "--join_token_file=" + shared.token_file,
      absl::StrCat("--timeout=", absl::FormatDuration(options.collective_timeout)),
      "--ready_file=" + files.ready,
      "--result_file=" + files.result,
      "--trace_file=" + files.trace,
      "--eval_file=" + files.evaluations,
      "--params_out=" + files.params};
  AppendPlace(at, argv);
  // The job comes from the controller; the worker's own settings from here.
  Append(TrainingOptionsArgv(options.training, TrainingOptionScope::kMember), argv);
  argv.insert(argv.end(), options.worker_flags.begin(), options.worker_flags.end());
  return argv;
}

int BlasThreadsPerWorker(int cores, int workers) {
  return std::max(1, cores / std::max(1, workers));
}

}  // namespace ringside::launch
