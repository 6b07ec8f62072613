// ringside-controller: membership, topology and mode for a Ringside job. Flags become
// ControllerOptions; server/controller/controller_daemon.h does the rest.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/allocator_tuning.h"
#include "common/flags/flags_usage.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/termination_signals.h"
#include "server/controller/controller_daemon.h"

namespace {
const ringside::server::ControllerOptions kDefaults;
}  // namespace

ABSL_FLAG(int, workers, kDefaults.workers, "workers the job waits for");
ABSL_FLAG(int, ps_shards, kDefaults.ps_shards, "parameter-server shards the job waits for");
ABSL_FLAG(std::string, mode, "ring", "initial synchronisation mode: ring or ps");
ABSL_FLAG(std::string, join_token_file, "", "file holding the token members must present");
ABSL_FLAG(std::string, operator_token_file, "",
          "file holding the token `ringside ctl mode` must present; empty: no mode switches");
ABSL_FLAG(absl::Duration, heartbeat_timeout, kDefaults.heartbeat_timeout,
          "a member silent for this long is dropped");
ABSL_FLAG(std::string, listen, kDefaults.listen, "address to serve the Controller service on");
ABSL_FLAG(std::string, metrics_listen, kDefaults.metrics_listen,
          "address of the Prometheus /metrics endpoint (port 0: any free port, printed)");
ABSL_FLAG(std::string, ready_file, "", "once serving, write {port, metrics_port} here as JSON");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "durable directory: the membership record (a restarted controller resumes the job) and "
          "the job's checkpoints; empty: nothing survives a restart");
ABSL_FLAG(int64_t, checkpoint_every, kDefaults.checkpoint_every,
          "write a checkpoint of the job every this many steps (needs --checkpoint_dir); 0: never");

constexpr char kUsage[] =
    "ringside-controller: assigns ranks, ring order, shard map and mode to a Ringside job.\n"
    "Every link: --tls_ca=PEM --tls_cert=PEM --tls_key=PEM (mutual TLS) or --insecure.";

int main(int argc, char** argv) {
  ringside::TerminationSignals signals;
  // Checkpoint uploads and reads stream the job's state in 1 MiB segments on gRPC's threads:
  // with an arena per thread each kept its own peak (heavy compare job, --checkpoint_every=10:
  // 117-130 MiB peak RSS against 77-87 with one arena).
  ringside::TuneAllocatorForSegmentStreams();
  ringside::ConfigureFlagsUsage(kUsage);
  if (ringside::PrintHelpIfAsked(argc, argv, kUsage, std::cout)) return 0;
  absl::ParseCommandLine(argc, argv);
  ringside::server::ControllerOptions options;
  options.workers = absl::GetFlag(FLAGS_workers);
  options.ps_shards = absl::GetFlag(FLAGS_ps_shards);
  options.join_token_file = absl::GetFlag(FLAGS_join_token_file);
  options.operator_token_file = absl::GetFlag(FLAGS_operator_token_file);
  options.heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.ready_file = absl::GetFlag(FLAGS_ready_file);
  options.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  absl::StatusOr<ringside::SyncMode> mode = ringside::ParseSyncMode(absl::GetFlag(FLAGS_mode));
  absl::StatusOr<ringside::TrainingOptions> training = ringside::TrainingOptionsFromFlags();
  absl::StatusOr<ringside::TransportSecurity> security = ringside::TransportSecurityFromFlags();
  absl::Status status =
      mode.ok() ? training.status()
                : absl::InvalidArgumentError(absl::StrCat("--mode: ", mode.status().message()));
  if (status.ok()) status = security.status();
  if (status.ok()) {
    options.mode = *mode;
    options.training = *std::move(training);
    options.security = *std::move(security);
    status = ringside::server::RunController(options, signals, std::cout);
  }
  if (!status.ok()) {
    std::cerr << "ringside-controller: " << status << "\n";
    return 1;
  }
  return 0;
}
