// ringside-ps: one parameter-server shard daemon. Flags become ShardOptions; server/ps/ps_daemon.h
// does the rest.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/allocator_tuning.h"
#include "common/flags/command_line.h"
#include "common/flags/flags_usage.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/termination_signals.h"
#include "server/ps/ps_daemon.h"

namespace {
const ringside::server::ShardOptions kDefaults;
}  // namespace

ABSL_FLAG(int, shard, kDefaults.shard, "this shard's index in [0, --ps_shards)");
ABSL_FLAG(int, ps_shards, kDefaults.ps_shards, "number of shards the parameters are split into");
ABSL_FLAG(int, workers, kDefaults.workers, "workers that push every step");
ABSL_FLAG(std::string, listen, kDefaults.listen,
          "address to serve ParameterShard on (port 0: any free port, printed)");
ABSL_FLAG(std::string, metrics_listen, kDefaults.metrics_listen,
          "address of the Prometheus /metrics endpoint (port 0: any free port, printed)");
ABSL_FLAG(int64_t, segment_bytes, kDefaults.segment_bytes,
          "largest payload of one parameter message sent back");
ABSL_FLAG(int64_t, elements, 0,
          "benchmark shard: hold this many zero parameters instead of the model's (with "
          "--optimizer=sgd --lr=1 the values stay exact integers that workers can check)");
ABSL_FLAG(std::string, controller, "",
          "elastic: the controller's HOST:PORT; the shard registers and takes its index, the job "
          "and each generation's state from there (--shard, --ps_shards, --workers and the job "
          "flags are then unused)");
ABSL_FLAG(std::string, join_token_file, "", "elastic: file holding the job's join token");
ABSL_FLAG(std::string, advertise, "",
          "elastic: HOST:PORT the workers dial (default: the --listen host and bound port)");
ABSL_FLAG(std::string, ready_file, "",
          "once serving, write {port, metrics_port, range_begin, range_end} here as JSON");

ABSL_FLAG(std::string, fault_at, "",
          "test only: end this shard with SIGKILL at a named point of its leave: leave_sent, "
          "handover (server/ps/ps_daemon.h)");

constexpr char kUsage[] =
    "ringside-ps: one parameter-server shard.\n"
    "Static: ringside-ps --shard=S --ps_shards=N --workers=W --listen=HOST:PORT "
    "(with the workers' --model, --seed, --optimizer, --lr)\n"
    "Elastic: ringside-ps --controller=HOST:PORT --join_token_file=PATH --listen=HOST:PORT\n"
    "Every link: --tls_ca=PEM --tls_cert=PEM --tls_key=PEM (mutual TLS) or --insecure";

int main(int argc, char** argv) {
  ringside::TerminationSignals signals;
  // The shard streams the same segments as the worker: the same allocator settings, so the PS's
  // cost per byte is measured against the ring's on equal terms.
  ringside::TuneAllocatorForSegmentStreams();
  ringside::ConfigureFlagsUsage(kUsage);
  if (ringside::PrintHelpIfAsked(argc, argv, kUsage, std::cout)) return 0;
  absl::ParseCommandLine(argc, argv);
  ringside::server::ShardOptions options;
  options.shard = absl::GetFlag(FLAGS_shard);
  options.ps_shards = absl::GetFlag(FLAGS_ps_shards);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.segment_bytes = absl::GetFlag(FLAGS_segment_bytes);
  options.ready_file = absl::GetFlag(FLAGS_ready_file);
  options.fault_at = absl::GetFlag(FLAGS_fault_at);
  options.elements = absl::GetFlag(FLAGS_elements);
  options.member.controller = absl::GetFlag(FLAGS_controller);
  options.member.join_token_file = absl::GetFlag(FLAGS_join_token_file);
  options.member.advertise = absl::GetFlag(FLAGS_advertise);
  absl::StatusOr<ringside::TrainingOptions> training = ringside::TrainingOptionsFromFlags();
  absl::StatusOr<ringside::TransportSecurity> security = ringside::TransportSecurityFromFlags();
  absl::Status status = training.status();
  if (status.ok()) status = security.status();
  // Neither a controller nor a static shape: a shard that silently became a one-worker static
  // one would wait for a worker nobody starts.
  if (status.ok() && options.member.controller.empty() &&
      !ringside::FlagGiven(argc, argv, "workers")) {
    status = absl::InvalidArgumentError(
        "say which shard this is: --controller=HOST:PORT (elastic) or --workers=W with --shard "
        "and --ps_shards (static); see --help");
  }
  if (status.ok()) {
    options.training = *std::move(training);
    options.security = *std::move(security);
    status = ringside::server::RunShard(options, signals, std::cout);
  }
  if (!status.ok()) {
    std::cerr << "ringside-ps: " << status << "\n";
    return 1;
  }
  return 0;
}
