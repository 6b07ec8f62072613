// ringside: the user's command.
//   ringside compare [flags]          PS vs ring on a local cluster, side by side (cli/commands.h)
//   ringside lab --link_rate=RATE     compare on shaped links, one network namespace per process
//   ringside lab --cleanup            removes namespaces left by lab runs that were killed
//   ringside up [flags]               a local cluster kept running for Prometheus/Grafana
//   ringside ctl mode ring|ps --controller=HOST:PORT   a live mode switch
//   ringside health --address=HOST:PORT                exit 0 when the gRPC health check serves
// ctl and health need --tls_ca --tls_cert --tls_key or --insecure (common/flags/security_flags.h);
// compare and up make their own CA and certificates unless given --insecure.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/health_check.h"
#include "cli/lab_bound.h"
#include "cli/scaling_sweep.h"
#include "common/auth.h"
#include "common/flags/flags_usage.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/grpc_util.h"
#include "common/link_rate.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "common/termination_signals.h"
#include "common/training_options.h"
#include "proto/controller.grpc.pb.h"
#include "server/controller/job_spec.h"
#include "server/ps/ps_client.h"
#include "worker/dataset.h"

ABSL_FLAG(std::string, controller, "", "ctl: the controller's address HOST:PORT");
ABSL_FLAG(std::string, operator_token_file, "",
          "ctl: file holding the controller's operator token (its --operator_token_file)");
ABSL_FLAG(std::string, address, "", "health: the daemon's gRPC address HOST:PORT");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10), "deadline of a ctl or health request");
ABSL_FLAG(std::string, workers, "4",
          "compare/up: workers in the local cluster; compare: a list such as 1,2,4,8 sweeps them "
          "(one cluster per count), reporting samples/s, scaling efficiency and step time "
          "against the model");
ABSL_FLAG(std::string, ps_shards, "2",
          "compare/up: parameter-server shards in the local cluster; compare: a list such as 1,2 "
          "sweeps ps mode over them too");
ABSL_FLAG(bool, colocate, false,
          "compare/lab: also run ps with one shard beside each worker (S = N; in the lab shard i "
          "runs on worker i's host, so their traffic never crosses its link), after ring and ps "
          "with --ps_shards");
ABSL_FLAG(std::string, timeline, "",
          "compare: write a Chrome trace / Perfetto JSON of every worker's steps (compute, sync, "
          "update) and regroups in every cluster here");
ABSL_FLAG(int64_t, timeline_capacity, 4096,
          "compare: events each worker keeps for --timeline (4 per step; older ones are dropped "
          "and counted)");
ABSL_FLAG(std::string, mode, "ring", "up: the mode the cluster starts in (ring or ps)");
ABSL_FLAG(absl::Duration, heartbeat_timeout, absl::Seconds(2),
          "compare/up: the controller drops a worker silent for this long");
ABSL_FLAG(std::string, json, "", "compare: write the results here as JSON");
ABSL_FLAG(std::string, report, "", "compare: write a self-contained HTML report here");
ABSL_FLAG(std::string, ready_file, "",
          "up: once running, write {controller, processes: [{name, pid, metrics_url}]} here");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "compare/up: the controller's durable directory (ringside-controller --checkpoint_dir), "
          "created if missing; compare gives each of its clusters its own subdirectory "
          "DIR/job-<n>-<mode>, so none resumes another's state; empty: nothing survives a "
          "controller restart");
ABSL_FLAG(int64_t, checkpoint_every, 0,
          "compare/up: the controller writes a checkpoint every this many steps (needs "
          "--checkpoint_dir); 0: never");
ABSL_FLAG(std::string, link_rate, "",
          "lab: the rate of every host's link, each way, in tc syntax (100mbit, 1gbit, 500kbit)");
ABSL_FLAG(std::string, slow_link, "",
          "lab: HOST:RATE (e.g. worker-3:20mbit): that lab host's link, each way, at RATE instead "
          "of --link_rate; a comma list, or the flag repeated, for several hosts");
ABSL_FLAG(bool, cleanup, false,
          "lab: only remove the network namespaces of lab runs whose process is gone, and exit");
ABSL_FLAG(double, target_accuracy, ringside::cli::kDefaultTargetAccuracy,
          "compare/lab: report each mode's time to this test accuracy, in (0, 1] (data with a "
          "held-out test set: fashion-mnist)");
ABSL_FLAG(std::string, ps_variants, "",
          "compare/lab: run ps mode once per listed variant against the same ring run, e.g. "
          "sync,staleness=2,backup_workers=1,async (each overrides --staleness and "
          "--backup_workers); empty: once with the job's own settings");
ABSL_FLAG(int64_t, ps_window_bytes, 0,
          "compare/lab: the workers' push window in ps mode, 16 bytes to 2 MiB (their "
          "--ps_window_bytes); 0: their default (2 MiB), and the lab's 256 KiB");
ABSL_FLAG(std::string, bin_dir, "",
          "compare/up: where ringside-controller, -ps and -worker are (default: next to this "
          "binary)");

namespace {

// What `ringside --help` says; `ringside COMMAND --help` gives the command's own usage and flags.
constexpr char kUsage[] =
    "usage: ringside compare|lab|up|ctl mode ring|ps|health [flags]\n"
    "  compare  PS vs ring on a local cluster: table, --json, --report\n"
    "  lab      compare with each process in its own network namespace, links shaped to\n"
    "           --link_rate (root; tbf), and the cost model's sync bound; --cleanup\n"
    "  up       a local cluster for Prometheus/Grafana until Ctrl-C\n"
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
  std::cout << "mode " << mode << " from generation " << reply.generation() << "\n";
  return 0;
}

std::string OwnDirectory(const char* argv0) {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string self = n > 0 ? std::string(path, n) : std::string(argv0);
  return self.substr(0, self.rfind('/'));
}

absl::StatusOr<ringside::cli::ClusterFlags> ClusterFromFlags(const char* argv0) {
  ringside::cli::ClusterFlags cluster;
  cluster.bin_dir =
      absl::GetFlag(FLAGS_bin_dir).empty() ? OwnDirectory(argv0) : absl::GetFlag(FLAGS_bin_dir);
  // A list sweeps (compare only); the cluster's own size is the list's largest.
  ASSIGN_OR_RETURN(const std::vector<int> workers,
                   ringside::cli::ParseCountList("--workers", absl::GetFlag(FLAGS_workers), 1024));
  ASSIGN_OR_RETURN(
      const std::vector<int> shards,
      ringside::cli::ParseCountList("--ps_shards", absl::GetFlag(FLAGS_ps_shards), 1024));
  cluster.workers = workers.back();
  cluster.ps_shards = shards.front();
  cluster.heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout);
  cluster.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  cluster.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  // The cluster's certificates are its own (a throw-away CA in its work directory): files given
  // here would not be used, so they are refused rather than silently ignored.
  const ringside::SecurityFlags security = ringside::SecurityFlagsFromCommandLine();
  if (!security.tls.ca.empty() || !security.tls.cert.empty() || !security.tls.key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_ca/--tls_cert/--tls_key are for ctl and health: compare and up make a throw-away "
        "CA and certificates for their cluster (or run it plaintext with --insecure)");
  }
  cluster.tls = !security.insecure;
  // Checked here, not by the controller, so a bad value fails at once naming the flag.
  if (cluster.checkpoint_every < 0) {
    return absl::InvalidArgumentError("--checkpoint_every must be >= 0");
  }
  if (cluster.checkpoint_every > 0 && cluster.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--checkpoint_every needs a --checkpoint_dir to write to");
  }
  return cluster;
}

bool FlagGiven(int argc, char** argv, const char* name) {
  const size_t length = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, length) == 0 && (argv[i][length] == '=' || !argv[i][length])) {
      return true;
    }
  }
  return false;
}

// Every value of a flag that may be repeated (Abseil keeps only the last): `--name=V` and
// `--name V`, with one dash or two.
std::vector<std::string> RepeatedFlagValues(int argc, char** argv, const std::string& name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) == 0) arg = arg.substr(1);
    if (arg == "-" + name && i + 1 < argc) {
      values.push_back(argv[++i]);
    } else if (arg.rfind("-" + name + "=", 0) == 0) {
      values.push_back(arg.substr(name.size() + 2));
    }
  }
  return values;
}

// --link_rate and --slow_link (lab): the rate of every link and the hosts' own ones.
absl::Status LabRatesFromFlags(int argc, char** argv, ringside::cli::CompareOptions& options) {
  if (absl::GetFlag(FLAGS_link_rate).empty()) {
    return absl::InvalidArgumentError("lab needs --link_rate=RATE, e.g. --link_rate=100mbit");
  }
  absl::StatusOr<ringside::LinkRate> rate = ringside::ParseLinkRate(absl::GetFlag(FLAGS_link_rate));
  if (!rate.ok()) {
    return absl::InvalidArgumentError("--link_rate: " + std::string(rate.status().message()));
  }
  options.link_rate = *rate;
  ASSIGN_OR_RETURN(options.slow_links,
                   ringside::cli::ParseSlowLinks(RepeatedFlagValues(argc, argv, "slow_link")));
  return absl::OkStatus();
}

// compare's default jobs: a communication-heavy model (the sync cost dominates) on real data,
// Fashion-MNIST, timed to a test accuracy, and Iris (small). Giving --model runs that one job
// instead; --data=fashion-mnist:DIR, --lr, --steps and --batch_size given apply to the heavy job
// too (its own defaults stand only for the flags not given).
std::vector<ringside::TrainingOptions> CompareJobs(const ringside::TrainingOptions& flags, int argc,
                                                   char** argv) {
  if (FlagGiven(argc, argv, "--model")) return {flags};
  const bool fashion = flags.data.rfind("fashion-mnist", 0) == 0;
  ringside::TrainingOptions heavy = flags;
  heavy.model = "784,1024,1024,10";
  heavy.data = fashion ? flags.data : "fashion-mnist";
  if (!FlagGiven(argc, argv, "--steps")) heavy.steps = 200;
  if (!FlagGiven(argc, argv, "--batch_size")) heavy.batch_size = 64;
  // Adam at the project's default 0.01 diverges on this model and data; 0.001 learns.
  if (!FlagGiven(argc, argv, "--lr")) heavy.optimizer.learning_rate = 0.001f;
  ringside::TrainingOptions iris = flags;
  if (fashion) iris.data = "iris";
  return {heavy, iris};
}

// --ps_variants, each checked against every job's other settings before any cluster starts.
absl::Status SetPsVariants(ringside::cli::CompareOptions& options) {
  const std::string text = absl::GetFlag(FLAGS_ps_variants);
  if (text.empty()) return absl::OkStatus();
  if (options.worker_counts.size() > 1 || options.shard_counts.size() > 1) {
    return absl::InvalidArgumentError(
        "--ps_variants compares one cluster size; a --workers or --ps_shards list sweeps");
  }
  ASSIGN_OR_RETURN(options.ps_variants, ringside::cli::ParsePsVariants(text));
  for (const ringside::TrainingOptions& job : options.jobs) {
    for (const ringside::cli::PsVariant& variant : options.ps_variants) {
      RETURN_IF_ERROR(ringside::cli::WithPsVariant(job, variant).status());
    }
  }
  return absl::OkStatus();
}

// A data set the jobs name must be there, and fit their models, before any cluster starts, not
// fail in every worker.
absl::Status CheckJobData(const std::vector<ringside::TrainingOptions>& jobs) {
  for (const ringside::TrainingOptions& job : jobs) {
    absl::StatusOr<ringside::ModelSpec> model =
        ringside::ModelSpec::Parse(job.model, job.activation);
    // A bad --model is the comparison's own first error, named as such.
    const absl::Status status = model.ok() ? ringside::worker::CheckDataFitsModel(job.data, *model)
                                           : ringside::worker::CheckDataSpec(job.data);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("--data: ", status.message()));
    }
  }
  return absl::OkStatus();
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
  return Fail("unknown command; see --help (compare, lab, up, ctl mode ring|ps, health)");
}

// The command's status as its exit code: 0, or 1 with the status on stderr.
int Finish(const absl::Status& status) { return status.ok() ? 0 : Fail(status.ToString()); }

// compare and up refuse lab's flags: taken silently, they would let a user believe the links
// were shaped.
bool LabFlagsGiven(const Invocation& invocation) {
  return !absl::GetFlag(FLAGS_link_rate).empty() || absl::GetFlag(FLAGS_cleanup) ||
         !RepeatedFlagValues(invocation.argc, invocation.argv, "slow_link").empty();
}

int RefuseLabFlags(const std::string& command) {
  return Fail("--link_rate, --slow_link and --cleanup are for `ringside lab`, not " + command);
}

// compare and lab: the comparison the flags describe (lab's link rates aside).
absl::StatusOr<ringside::cli::CompareOptions> CompareOptionsFromFlags(
    const Invocation& invocation) {
  ASSIGN_OR_RETURN(const ringside::TrainingOptions training, ringside::TrainingOptionsFromFlags());
  ringside::cli::CompareOptions options;
  ASSIGN_OR_RETURN(options.cluster, ClusterFromFlags(invocation.argv[0]));
  options.target_accuracy = absl::GetFlag(FLAGS_target_accuracy);
  if (!(options.target_accuracy > 0 && options.target_accuracy <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--target_accuracy=", options.target_accuracy,
                                                   ": must be in (0, 1], e.g. 0.8 for 80%"));
  }
  options.jobs = CompareJobs(training, invocation.argc, invocation.argv);
  RETURN_IF_ERROR(CheckJobData(options.jobs));
  options.json_file = absl::GetFlag(FLAGS_json);
  options.report_file = absl::GetFlag(FLAGS_report);
  // Validated in ClusterFromFlags already.
  options.worker_counts =
      *ringside::cli::ParseCountList("--workers", absl::GetFlag(FLAGS_workers), 1024);
  options.shard_counts =
      *ringside::cli::ParseCountList("--ps_shards", absl::GetFlag(FLAGS_ps_shards), 1024);
  options.colocate = absl::GetFlag(FLAGS_colocate);
  if (options.colocate && ringside::cli::IsSweep(options)) {
    return absl::InvalidArgumentError(
        "--colocate runs one cluster size: give --workers and --ps_shards one count");
  }
  options.timeline_file = absl::GetFlag(FLAGS_timeline);
  options.timeline_capacity = absl::GetFlag(FLAGS_timeline_capacity);
  if (options.timeline_capacity < 4 || options.timeline_capacity > 1'000'000) {
    return absl::InvalidArgumentError(
        "--timeline_capacity: keep between 4 (one step) and 1000000 events");
  }
  RETURN_IF_ERROR(SetPsVariants(options));
  const int64_t window = absl::GetFlag(FLAGS_ps_window_bytes);
  if (absl::Status valid = ringside::server::CheckPsWindowBytes(window);
      window != 0 && !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(valid.message(), "; or 0 for the workers' default"));
  }
  options.ps_window_bytes = static_cast<uint64_t>(window);
  return options;
}

int CompareCommand(const Invocation& invocation) {
  if (LabFlagsGiven(invocation)) return RefuseLabFlags("compare");
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::cli::CompareOptions> options = CompareOptionsFromFlags(invocation);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  return Finish(ringside::cli::RunCompare(*options, invocation.signals, std::cout));
}

int LabCommand(const Invocation& invocation) {
  if (invocation.args.size() != 2) return UnknownCommand();
  if (absl::GetFlag(FLAGS_cleanup)) return Finish(ringside::cli::RunLabCleanup(std::cout));
  absl::StatusOr<ringside::cli::CompareOptions> options = CompareOptionsFromFlags(invocation);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  if (absl::Status rates = LabRatesFromFlags(invocation.argc, invocation.argv, *options);
      !rates.ok()) {
    return Fail(std::string(rates.message()));
  }
  return Finish(ringside::cli::RunLab(*options, invocation.signals, std::cout));
}

int UpCommand(const Invocation& invocation) {
  if (LabFlagsGiven(invocation)) return RefuseLabFlags("up");
  if (invocation.args.size() != 2) return UnknownCommand();
  absl::StatusOr<ringside::TrainingOptions> training = ringside::TrainingOptionsFromFlags();
  if (!training.ok()) return Fail(std::string(training.status().message()));
  absl::StatusOr<ringside::cli::ClusterFlags> cluster = ClusterFromFlags(invocation.argv[0]);
  if (!cluster.ok()) return Fail(std::string(cluster.status().message()));
  if (absl::GetFlag(FLAGS_colocate)) return Fail("--colocate is for compare and lab, not up");
  ringside::cli::UpOptions options;
  if (absl::StrContains(absl::GetFlag(FLAGS_workers), ',') ||
      absl::StrContains(absl::GetFlag(FLAGS_ps_shards), ',')) {
    return Fail("--workers/--ps_shards: up runs one cluster; a list sweeps only in compare");
  }
  options.cluster = *cluster;
  absl::StatusOr<ringside::SyncMode> mode = ringside::ParseSyncMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) return Fail("--mode: " + std::string(mode.status().message()));
  options.mode = *mode;
  options.job = *training;
  if (absl::Status data = CheckJobData({options.job}); !data.ok()) {
    return Fail(std::string(data.message()));
  }
  options.ready_file = absl::GetFlag(FLAGS_ready_file);
  return Finish(ringside::cli::RunUp(options, invocation.signals, std::cout));
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
  const char* usage;
  std::vector<absl::string_view> flags;
  bool training;
  int (*run)(const Invocation& invocation);
};

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
    {"compare",
     "usage: ringside compare [flags]\n"
     "Runs the same job(s) on a local cluster (controller, shards, workers on loopback) in ps\n"
     "mode and in ring mode, and prints the side-by-side table; --json and --report write it.",
     Join(kClusterFlags, {"json", "report", "timeline", "timeline_capacity", "target_accuracy",
                          "colocate", "ps_variants", "ps_window_bytes"}),
     true, &CompareCommand},
    {"lab",
     "usage: ringside lab --link_rate=RATE [flags]   (root)\n"
     "       ringside lab --cleanup\n"
     "compare with every process in its own network namespace on links shaped to --link_rate,\n"
     "and the cost model's sync-time bound at that rate per mode.",
     Join(kClusterFlags,
          {"json", "report", "timeline", "timeline_capacity", "target_accuracy", "colocate",
           "ps_variants", "ps_window_bytes", "link_rate", "slow_link", "cleanup"}),
     true, &LabCommand},
    {"up",
     "usage: ringside up [flags]\n"
     "Starts a local cluster and keeps it running until Ctrl-C, printing every process's\n"
     "metrics URL (and writing them, with the flags `ringside ctl` needs, to --ready_file).",
     Join(kClusterFlags, {"mode", "ready_file"}), true, &UpCommand},
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
