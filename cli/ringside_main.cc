// ringside: the user's command.
//   ringside compare [flags]          PS vs ring on a local cluster, side by side (cli/commands.h)
//   ringside lab --link_rate=RATE     compare on shaped links, one network namespace per process
//   ringside lab --cleanup            removes namespaces left by lab runs that were killed
//   ringside plan [flags]             predicts each mode's step on a cluster (cli/plan_report.h)
//   ringside up [flags]               a local cluster kept running for Prometheus/Grafana
//   ringside ctl mode ring|ps --controller=HOST:PORT   a live mode switch
//   ringside health --address=HOST:PORT                exit 0 when the gRPC health check serves
// ctl and health need --tls_ca --tls_cert --tls_key or --insecure (common/flags/security_flags.h);
// compare and up make their own CA and certificates unless given --insecure.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/health_check.h"
#include "cli/ringside_flags.h"
#include "common/auth.h"
#include "common/flags/flags_usage.h"
#include "common/flags/security_flags.h"
#include "common/grpc_util.h"
#include "common/net.h"
#include "common/termination_signals.h"
#include "common/training_options.h"
#include "proto/controller.grpc.pb.h"
#include "server/controller/job_spec.h"

namespace {

// What `ringside --help` says; `ringside COMMAND --help` gives the command's own usage and flags.
constexpr char kUsage[] =
    "usage: ringside compare|lab|plan|up|ctl mode ring|ps|health [flags]\n"
    "  compare  PS vs ring on a local cluster: table, --json, --report\n"
    "  lab      compare with each process in its own network namespace, links shaped to\n"
    "           --link_rate (root; tbf), and the cost model's sync bound; --cleanup\n"
    "  plan     predicts each mode's step time on a cluster you do not have, from a probe\n"
    "  up       a local cluster that trains until Ctrl-C, for Prometheus/Grafana\n"
    "  ctl mode switches a running job's mode at its next step boundary\n"
    "  health   checks a daemon's gRPC health service (--address)\n"
    "ctl and health: --tls_ca=PEM --tls_cert=PEM --tls_key=PEM (mutual TLS) or --insecure;\n"
    "compare and up make their own CA and certificates (or run plaintext with --insecure).\n"
    "`ringside COMMAND --help` lists that command's flags; --helpfull lists every flag.";

int Fail(const std::string& message) {
  std::cerr << "ringside: " << message << "\n";
  return 1;
}

int SetMode(const std::string& mode, const ringside::TransportSecurity& security) {
  const std::string controller = absl::GetFlag(FLAGS_controller);
  if (absl::Status status = ringside::ParseHostPort(controller).status(); !status.ok()) {
    return Fail("--controller: " + std::string(status.message()));
  }
  absl::StatusOr<std::string> token = ringside::server::ReadTokenFile(
      absl::GetFlag(FLAGS_operator_token_file), "--operator_token_file");
  if (!token.ok()) return Fail(std::string(token.status().message()));
  auto stub = ringside::proto::Controller::NewStub(ringside::MakeChannel(controller, security));
  grpc::ClientContext context;
  ringside::SetDeadline(context, absl::GetFlag(FLAGS_timeout));
  context.AddMetadata(ringside::kOperatorTokenMetadata, *token);
  ringside::proto::ModeRequest request;
  request.set_mode(mode);
  ringside::proto::ModeReply reply;
  const grpc::Status status = stub->SetMode(&context, request, &reply);
  if (!status.ok()) {
    return Fail("mode change refused by " + controller + ": " + status.error_message());
  }
  if (reply.unchanged()) {
    std::cout << "already in " << mode << " mode (generation " << reply.generation()
              << "): nothing to switch\n";
  } else {
    std::cout << "mode " << mode << " from generation " << reply.generation() << "\n";
  }
  return 0;
}

// What a command gets: the command line as given (for the flags read by hand), its positional
// arguments after Abseil's parsing (args[0] the binary, args[1] the command) and the signals that
// stop it.
struct Invocation {
  int argc;
  char** argv;
  const std::vector<char*>& args;
  const ringside::TerminationSignals& signals;
};

int UnknownCommand() {
  return Fail("unknown command; see --help (compare, lab, plan, up, ctl mode ring|ps, health)");
}

// `ringside` alone: what it can do, as a misuse (exit 2).
int Usage() {
  std::cerr << kUsage << "\n";
  return 2;
}

// The command's status as its exit code: 0, or 1 with the status on stderr.
int Finish(const absl::Status& status) { return status.ok() ? 0 : Fail(status.ToString()); }

int RefuseLabFlags(const std::string& command) {
  return Fail("--link_rate, --slow_link and --cleanup are for `ringside lab`, not " + command);
}

int CompareCommand(const Invocation& invocation) {
  if (ringside::cli::LabFlagsGiven(invocation.argc, invocation.argv))
    return RefuseLabFlags("compare");
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::cli::CompareOptions> options =
      ringside::cli::CompareOptionsFromFlags(invocation.argc, invocation.argv);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  return Finish(ringside::cli::RunCompare(*options, invocation.signals, std::cout));
}

int LabCommand(const Invocation& invocation) {
  if (invocation.args.size() != 2) return UnknownCommand();
  if (absl::GetFlag(FLAGS_cleanup)) return Finish(ringside::cli::RunLabCleanup(std::cout));
  absl::StatusOr<ringside::cli::CompareOptions> options =
      ringside::cli::CompareOptionsFromFlags(invocation.argc, invocation.argv);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  if (absl::Status rates =
          ringside::cli::LabRatesFromFlags(invocation.argc, invocation.argv, *options);
      !rates.ok()) {
    return Fail(std::string(rates.message()));
  }
  return Finish(ringside::cli::RunLab(*options, invocation.signals, std::cout));
}

int PlanCommand(const Invocation& invocation) {
  if (absl::GetFlag(FLAGS_cleanup)) return Fail("--cleanup is for `ringside lab`, not plan");
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::cli::PlanOptions> options =
      ringside::cli::PlanOptionsFromFlags(invocation.argc, invocation.argv);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  return Finish(ringside::cli::RunPlan(*options, std::cout));
}

int UpCommand(const Invocation& invocation) {
  if (ringside::cli::LabFlagsGiven(invocation.argc, invocation.argv)) return RefuseLabFlags("up");
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::cli::UpOptions> options =
      ringside::cli::UpOptionsFromFlags(invocation.argc, invocation.argv);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  return Finish(ringside::cli::RunUp(*options, invocation.signals, std::cout));
}

// `ringside ctl mode ring|ps`.
int CtlCommand(const Invocation& invocation) {
  const std::vector<char*>& args = invocation.args;
  if (args.size() != 4 || std::strcmp(args[2], "mode") != 0) return UnknownCommand();
  const std::string mode = args[3];
  if (mode != "ring" && mode != "ps") return Fail("mode must be ring or ps, not '" + mode + "'");
  absl::StatusOr<ringside::TransportSecurity> security = ringside::TransportSecurityFromFlags();
  if (!security.ok()) return Fail(std::string(security.status().message()));
  return SetMode(mode, *security);
}

int HealthCommand(const Invocation& invocation) {
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::TransportSecurity> security = ringside::TransportSecurityFromFlags();
  if (!security.ok()) return Fail(std::string(security.status().message()));
  const absl::Status status = ringside::cli::CheckHealth(absl::GetFlag(FLAGS_address),
                                                         absl::GetFlag(FLAGS_timeout), *security);
  if (!status.ok()) return Fail(std::string(status.message()));
  std::cout << "SERVING\n";
  return 0;
}

// The dispatch table. A subcommand's usage and the flags it reads: its own (cli/ringside_main.cc),
// and the job's (every setting of common/training_options.h's description) when `training`.
struct Subcommand {
  const char* name;
  std::string usage;
  std::vector<absl::string_view> flags;
  bool training;
  int (*run)(const Invocation& invocation);
};

const std::string kCompareUsage =
    std::string(
        "usage: ringside compare [flags]\n"
        "Runs the same job(s) on a local cluster (controller, shards, workers on loopback) in ps\n"
        "mode and in ring mode, and prints the side-by-side table; --json and --report write "
        "it.\n") +
    ringside::cli::kCompareJobs;

const std::vector<absl::string_view> kClusterFlags = {
    "workers",          "ps_shards", "heartbeat_timeout", "checkpoint_dir",
    "checkpoint_every", "bin_dir",   "insecure"};
const std::vector<absl::string_view> kClientFlags = {"timeout", "tls_ca", "tls_cert", "tls_key",
                                                     "insecure"};

std::vector<absl::string_view> Join(std::vector<absl::string_view> a,
                                    const std::vector<absl::string_view>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const Subcommand kSubcommands[] = {
    {"compare", kCompareUsage,
     Join(kClusterFlags, {"json", "report", "timeline", "timeline_capacity", "target_accuracy",
                          "colocate", "ps_variants", "compression_variants", "ps_window_bytes",
                          "repeats", "probe", "stall_timeout"}),
     true, &CompareCommand},
    {"lab",
     "usage: ringside lab --link_rate=RATE [flags]   (root)\n"
     "       ringside lab --cleanup\n"
     "compare with every process in its own network namespace on links shaped to --link_rate,\n"
     "and the cost model's sync-time bound at that rate per mode.",
     Join(kClusterFlags,
          {"json", "report", "timeline", "timeline_capacity", "target_accuracy", "colocate",
           "ps_variants", "compression_variants", "ps_window_bytes", "repeats", "link_rate",
           "slow_link", "cleanup", "probe", "probe_out", "stall_timeout"}),
     true, &LabCommand},
    {"plan",
     "usage: ringside plan [--workers=8,64,256] [--ps_shards=1,4] [--link_rate=10gbit]\n"
     "         [--link_latency=50us] [--straggler=worker-3:3] [--probe=FILE | --probe_out=FILE]\n"
     "         [--probe_targets=HOST:PORT,... --probe_token_file=FILE (--tls_* | --insecure)]\n"
     "Predicts each mode's compute, sync and step time, samples/s and time to target on each\n"
     "cluster size, ranks the modes and names the term that decides; --json and --chart;\n"
     "--calibrate=FILE,... fits the model to measured runs first.",
     {"workers",         "ps_shards",     "link_rate",
      "link_latency",    "probe",         "probe_out",
      "probe_members",   "probe_targets", "probe_token_file",
      "tls_ca",          "tls_cert",      "tls_key",
      "steps_to_target", "json",          "chart",
      "measured",        "calibrate",     "insecure",
      "ps_window_bytes", "one_host"},
     true,
     &PlanCommand},
    {"up",
     "usage: ringside up [flags]\n"
     "Starts a local cluster that trains until Ctrl-C (or for --steps), printing every\n"
     "process's metrics URL (and writing them, their gRPC addresses and the flags\n"
     "`ringside ctl` needs to --ready_file).",
     Join(kClusterFlags, {"mode", "ready_file", "probe"}), true, &UpCommand},
    {"ctl",
     "usage: ringside ctl mode ring|ps --controller=HOST:PORT --operator_token_file=PATH\n"
     "         (--tls_ca=PEM --tls_cert=PEM --tls_key=PEM | --insecure)\n"
     "Switches a running job's mode at its next step boundary.",
     Join(kClientFlags, {"controller", "operator_token_file"}), false, &CtlCommand},
    {"health",
     "usage: ringside health --address=HOST:PORT\n"
     "         (--tls_ca=PEM --tls_cert=PEM --tls_key=PEM | --insecure)\n"
     "Exits 0 when the daemon's gRPC health service answers SERVING.",
     Join(kClientFlags, {"address"}), false, &HealthCommand},
};

bool TakesFlag(const Subcommand& command, const absl::CommandLineFlag& flag) {
  if (command.training && ringside::FindTrainingOption(flag.Name()) != nullptr) return true;
  return std::find(command.flags.begin(), command.flags.end(), flag.Name()) != command.flags.end();
}

int Run(const Invocation& invocation) {
  if (invocation.args.size() == 1) return Usage();
  if (invocation.args.size() > 1) {
    for (const Subcommand& command : kSubcommands) {
      if (std::strcmp(invocation.args[1], command.name) == 0) return command.run(invocation);
    }
  }
  return UnknownCommand();
}

}  // namespace

int main(int argc, char** argv) {
  ringside::TerminationSignals signals;
  ringside::ConfigureFlagsUsage(kUsage);
  if (argc > 1 && argv[1][0] != '-') {
    // `ringside COMMAND --help`: that command's usage and flags.
    for (const Subcommand& command : kSubcommands) {
      if (std::strcmp(argv[1], command.name) == 0 &&
          ringside::PrintHelpIfAsked(
              argc, argv, command.usage, std::cout,
              [&](const absl::CommandLineFlag& flag) { return TakesFlag(command, flag); })) {
        return 0;
      }
    }
  }
  if (ringside::PrintHelpIfAsked(argc, argv, kUsage, std::cout)) return 0;
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  // The boundary of every command: whatever escapes (a library's exception) becomes a clear
  // error and exit code 1, never an abort. Children are stopped by their owners' destructors.
  try {
    return Run({argc, argv, args, signals});
  } catch (const std::exception& e) {
    std::cerr << "ringside: internal error: " << std::string(e.what()).substr(0, 500)
              << "; please report it with the command line\n";
  } catch (...) {
    std::cerr << "ringside: internal error (unknown exception); please report it\n";
  }
  return 1;
}
