// The `ringside` command's flags, and the options each command reads from them: every value is
// checked here, before anything starts, and a bad one is refused in one line naming its flag.
#include "cli/ringside_flags.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/compression_variants.h"
#include "cli/lab_bound.h"
#include "cli/ps_variants.h"
#include "cli/scaling_sweep.h"
#include "common/cluster_probe.h"
#include "common/flags/command_line.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/link_rate.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "common/training_options.h"
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
ABSL_FLAG(std::string, json, "", "compare, plan: write the results here as JSON");
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
          "lab: the rate of every host's link, each way, in tc syntax (100mbit, 1gbit, 500kbit); "
          "plan: the rate of the cluster's links, in place of the probe's");
ABSL_FLAG(std::string, probe_out, "",
          "plan: probe this host on loopback (or --probe_targets) and write the probe file here; "
          "lab: probe the lab's worker links first, write the file here and predict every run "
          "from it");
ABSL_FLAG(std::string, probe, "",
          "plan: the probe file of the cluster (written by --probe_out) to take its costs from; "
          "compare/lab: predict every run's step and sync from it, beside the measured ones; "
          "up: every worker exports the predicted step (ringside_predicted_step_seconds)");
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
ABSL_FLAG(std::string, compression_variants, "",
          "compare/lab: run each listed codec once more in every mode it fits, beside the plain "
          "runs, e.g. powersgd:2,randomk:0.01,topk:0.01,sign (the first two the ring's, the others "
          "the parameter server's); the table and report set test accuracy against bytes sent");
ABSL_FLAG(int64_t, repeats, 1,
          "compare/lab: run each mode (each --ps_variants variant, --colocate's run) this many "
          "times, alternated ring, ps, ring, ps, ...; the figures are then medians with their "
          "min-max, and the verdict's 95% interval a bootstrap over the repeats (with 1: over the "
          "steps of the one run), 1 to 50");
ABSL_FLAG(absl::Duration, stall_timeout, absl::Minutes(5),
          "compare/lab: fail a run whose workers make no step and send no byte for this long "
          "(a stalled cluster), keeping its logs; at least 1s");
ABSL_FLAG(int64_t, ps_window_bytes, 0,
          "compare/lab/plan: the workers' push window in ps mode, 16 bytes to 2 MiB (their "
          "--ps_window_bytes); 0: their default (2 MiB), and the lab's 256 KiB (plan: 2 MiB)");
ABSL_FLAG(std::string, bin_dir, "",
          "compare/up: where ringside-controller, -ps and -worker are (default: next to this "
          "binary)");

namespace ringside::cli {
namespace {

constexpr int64_t kMaxRepeats = 50;  // 50 runs of each mode is hours: enough for any interval

std::string OwnDirectory(const char* argv0) {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string self = n > 0 ? std::string(path, n) : std::string(argv0);
  return self.substr(0, self.rfind('/'));
}

absl::StatusOr<ClusterFlags> ClusterFromFlags(const char* argv0) {
  ClusterFlags cluster;
  cluster.bin_dir =
      absl::GetFlag(FLAGS_bin_dir).empty() ? OwnDirectory(argv0) : absl::GetFlag(FLAGS_bin_dir);
  // A list sweeps (compare only); the cluster's own size is the list's largest.
  ASSIGN_OR_RETURN(const std::vector<int> workers,
                   ParseCountList("--workers", absl::GetFlag(FLAGS_workers), 1024));
  ASSIGN_OR_RETURN(const std::vector<int> shards,
                   ParseCountList("--ps_shards", absl::GetFlag(FLAGS_ps_shards), 1024));
  cluster.workers = workers.back();
  cluster.ps_shards = shards.front();
  cluster.heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout);
  cluster.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  cluster.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  // The cluster's certificates are its own (a throw-away CA in its work directory): files given
  // here would not be used, so they are refused rather than silently ignored.
  const SecurityFlags security = SecurityFlagsFromCommandLine();
  if (!security.tls.ca.empty() || !security.tls.cert.empty() || !security.tls.key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_ca/--tls_cert/--tls_key are for ctl and health: compare and up make a throw-away "
        "CA and certificates for their cluster (or run it plaintext with --insecure)");
  }
  cluster.tls = !security.insecure;
  // Checked here, not by the controller, so a bad value fails at once naming the flag.
  if (cluster.heartbeat_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat_timeout must be positive, e.g. 2s");
  }
  if (cluster.checkpoint_every < 0) {
    return absl::InvalidArgumentError("--checkpoint_every must be >= 0");
  }
  if (cluster.checkpoint_every > 0 && cluster.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--checkpoint_every needs a --checkpoint_dir to write to");
  }
  return cluster;
}

// compare's jobs (kCompareJobs). A data set without a job of its own needs --model.
absl::StatusOr<std::vector<TrainingOptions>> CompareJobs(const TrainingOptions& flags, int argc,
                                                         char** argv) {
  if (FlagGiven(argc, argv, "model")) return std::vector<TrainingOptions>{flags};
  const bool data_given = FlagGiven(argc, argv, "data");
  const bool fashion = flags.data.rfind("fashion-mnist", 0) == 0;
  TrainingOptions heavy = flags;
  heavy.model = "784,1024,1024,10";
  heavy.data = fashion ? flags.data : "fashion-mnist";
  if (!FlagGiven(argc, argv, "steps")) heavy.steps = 200;
  if (!FlagGiven(argc, argv, "batch_size")) heavy.batch_size = 64;
  // Adam at the project's default 0.01 diverges on this model and data; 0.001 learns.
  if (!FlagGiven(argc, argv, "lr")) heavy.optimizer.learning_rate = 0.001f;
  TrainingOptions iris = flags;
  iris.data = "iris";
  if (!data_given) return std::vector<TrainingOptions>{heavy, iris};
  if (fashion) return std::vector<TrainingOptions>{heavy};
  if (flags.data == "iris") return std::vector<TrainingOptions>{iris};
  return absl::InvalidArgumentError(absl::StrCat(
      "--data=", flags.data,
      " has no job of its own: add --model=INPUTS,...,CLASSES to say what to train on it"));
}

// A variants flag (--ps_variants, --compression_variants): its list, each variant checked against
// every job's other settings before any cluster starts; not with a sweep.
template <typename Variant>
absl::Status SetVariants(const CompareOptions& options, absl::string_view flag,
                         const std::string& text,
                         absl::StatusOr<std::vector<Variant>> (*parse)(absl::string_view),
                         absl::StatusOr<TrainingOptions> (*with)(const TrainingOptions&,
                                                                 const Variant&),
                         std::vector<Variant>& variants) {
  if (text.empty()) return absl::OkStatus();
  if (IsSweep(options)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " compares one cluster size; a --workers or --ps_shards list sweeps"));
  }
  ASSIGN_OR_RETURN(variants, parse(text));
  for (const TrainingOptions& job : options.jobs) {
    for (const Variant& variant : variants) RETURN_IF_ERROR(with(job, variant).status());
  }
  return absl::OkStatus();
}

// A data set the jobs name must be there, and fit their models, before any cluster starts, not
// fail in every worker.
absl::Status CheckJobData(const std::vector<TrainingOptions>& jobs) {
  for (const TrainingOptions& job : jobs) {
    absl::StatusOr<ModelSpec> model = ModelSpec::Parse(job.model, job.activation);
    if (!model.ok()) {
      return absl::Status(model.status().code(),
                          absl::StrCat("--model: ", model.status().message()));
    }
    const absl::Status status = worker::CheckDataFitsModel(job.data, *model);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("--data: ", status.message()));
    }
  }
  return absl::OkStatus();
}

// --probe: the costs every run's prediction is made with, from a probe of the jobs' model.
absl::Status ReadPredictedCosts(const std::vector<TrainingOptions>& jobs,
                                std::optional<ClusterCosts>& costs) {
  const std::string path = absl::GetFlag(FLAGS_probe);
  if (path.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const ClusterProbe probe, ReadClusterProbe(path));
  for (const TrainingOptions& job : jobs) {
    if (absl::Status same = CheckProbeMatchesModel(probe, path, job.model, job.activation);
        !same.ok()) {
      return absl::Status(same.code(), absl::StrCat("--probe: ", same.message(),
                                                    " (--model or --data runs one job)"));
    }
  }
  costs = probe.costs;
  return absl::OkStatus();
}

}  // namespace

// Where a command will write, checked before anything starts rather than after a long run:
// the directory must exist and be writable, and the path must not be a directory or a file it
// cannot replace.
absl::Status CheckOutputPath(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": is a directory; give a file path"));
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": cannot write in ", dir, " (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

// The jobs plain `compare` runs, what its --help says: the communication-heavy one (the sync cost
// dominates) on real data, timed to a test accuracy, then the small Iris one.
const char kCompareJobs[] =
    "Without --model it runs two jobs: the heavy one, --model=784,1024,1024,10 on\n"
    "--data=fashion-mnist (200 steps, batch 64, Adam lr 0.001, timed to --target_accuracy), then\n"
    "the small one, the flags' own defaults on --data=iris (the defaults listed below are that\n"
    "job's). --data=iris or --data=fashion-mnist[:DIR] alone runs only that job; --model runs the\n"
    "one job the flags describe. --steps, --batch_size and --lr given apply to every job.";

// --link_rate and --slow_link (lab): the rate of every link and the hosts' own ones.
absl::Status LabRatesFromFlags(int argc, char** argv, CompareOptions& options) {
  if (absl::GetFlag(FLAGS_link_rate).empty()) {
    return absl::InvalidArgumentError("lab needs --link_rate=RATE, e.g. --link_rate=100mbit");
  }
  absl::StatusOr<LinkRate> rate = ParseLinkRate(absl::GetFlag(FLAGS_link_rate));
  if (!rate.ok()) {
    return absl::InvalidArgumentError("--link_rate: " + std::string(rate.status().message()));
  }
  options.link_rate = *rate;
  ASSIGN_OR_RETURN(options.slow_links, ParseSlowLinks(RepeatedFlagValues(argc, argv, "slow_link")));
  options.lab_probe_out = absl::GetFlag(FLAGS_probe_out);
  if (options.lab_probe_out.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckOutputPath("--probe_out", options.lab_probe_out));
  if (options.predicted_costs.has_value()) {
    return absl::InvalidArgumentError(
        "--probe reads a probe file, --probe_out probes the lab's links: give one of them");
  }
  if (options.jobs.size() != 1) {
    return absl::InvalidArgumentError(
        "--probe_out probes one job's model: give --model or --data to run one job");
  }
  return absl::OkStatus();
}

// compare and lab: the comparison the flags describe (lab's link rates aside).
absl::StatusOr<CompareOptions> CompareOptionsFromFlags(int argc, char** argv) {
  ASSIGN_OR_RETURN(const TrainingOptions training, TrainingOptionsFromFlags());
  CompareOptions options;
  ASSIGN_OR_RETURN(options.cluster, ClusterFromFlags(argv[0]));
  options.target_accuracy = absl::GetFlag(FLAGS_target_accuracy);
  if (!(options.target_accuracy > 0 && options.target_accuracy <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--target_accuracy=", options.target_accuracy,
                                                   ": must be in (0, 1], e.g. 0.8 for 80%"));
  }
  ASSIGN_OR_RETURN(options.jobs, CompareJobs(training, argc, argv));
  RETURN_IF_ERROR(CheckJobData(options.jobs));
  options.json_file = absl::GetFlag(FLAGS_json);
  options.report_file = absl::GetFlag(FLAGS_report);
  RETURN_IF_ERROR(CheckOutputPath("--json", options.json_file));
  RETURN_IF_ERROR(CheckOutputPath("--report", options.report_file));
  RETURN_IF_ERROR(CheckOutputPath("--timeline", absl::GetFlag(FLAGS_timeline)));
  // Validated in ClusterFromFlags already.
  options.worker_counts = *ParseCountList("--workers", absl::GetFlag(FLAGS_workers), 1024);
  options.shard_counts = *ParseCountList("--ps_shards", absl::GetFlag(FLAGS_ps_shards), 1024);
  options.colocate = absl::GetFlag(FLAGS_colocate);
  if (options.colocate && IsSweep(options)) {
    return absl::InvalidArgumentError(
        "--colocate runs one cluster size: give --workers and --ps_shards one count");
  }
  options.timeline_file = absl::GetFlag(FLAGS_timeline);
  options.timeline_capacity = absl::GetFlag(FLAGS_timeline_capacity);
  if (options.timeline_capacity < 4 || options.timeline_capacity > 1'000'000) {
    return absl::InvalidArgumentError(
        "--timeline_capacity: keep between 4 (one step) and 1000000 events");
  }
  RETURN_IF_ERROR(SetVariants(options, "--ps_variants", absl::GetFlag(FLAGS_ps_variants),
                              &ParsePsVariants, &WithPsVariant, options.ps_variants));
  RETURN_IF_ERROR(SetVariants(options, "--compression_variants",
                              absl::GetFlag(FLAGS_compression_variants), &ParseCompressionVariants,
                              &WithCompression, options.compression_variants));
  const int64_t repeats = absl::GetFlag(FLAGS_repeats);
  if (repeats < 1 || repeats > kMaxRepeats) {
    return absl::InvalidArgumentError(
        absl::StrCat("--repeats=", repeats, ": must be 1 to ", kMaxRepeats, ", e.g. 5"));
  }
  if (repeats > 1 && IsSweep(options)) {
    return absl::InvalidArgumentError(
        "--repeats runs one cluster size: give --workers and --ps_shards one count");
  }
  options.repeats = static_cast<int>(repeats);
  const int64_t window = absl::GetFlag(FLAGS_ps_window_bytes);
  if (absl::Status valid = server::CheckPsWindowBytes(window); window != 0 && !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(valid.message(), "; or 0 for the workers' default"));
  }
  options.ps_window_bytes = static_cast<uint64_t>(window);
  options.stall_timeout = absl::GetFlag(FLAGS_stall_timeout);
  if (options.stall_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--stall_timeout=", absl::FormatDuration(options.stall_timeout), ": at least 1s, e.g. 5m"));
  }
  RETURN_IF_ERROR(ReadPredictedCosts(options.jobs, options.predicted_costs));
  return options;
}

// up: one cluster that trains until stopped unless --steps says otherwise.
absl::StatusOr<UpOptions> UpOptionsFromFlags(int argc, char** argv) {
  UpOptions options;
  ASSIGN_OR_RETURN(options.job, TrainingOptionsFromFlags());
  ASSIGN_OR_RETURN(options.cluster, ClusterFromFlags(argv[0]));
  if (absl::GetFlag(FLAGS_colocate)) {
    return absl::InvalidArgumentError("--colocate is for compare and lab, not up");
  }
  if (absl::StrContains(absl::GetFlag(FLAGS_workers), ',') ||
      absl::StrContains(absl::GetFlag(FLAGS_ps_shards), ',')) {
    return absl::InvalidArgumentError(
        "--workers/--ps_shards: up runs one cluster; a list sweeps only in compare");
  }
  absl::StatusOr<SyncMode> mode = ParseSyncMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok())
    return absl::InvalidArgumentError("--mode: " + std::string(mode.status().message()));
  options.mode = *mode;
  // up is a cluster to watch: it trains until stopped unless --steps says otherwise.
  if (!FlagGiven(argc, argv, "steps")) options.job.steps = kUntilStoppedSteps;
  RETURN_IF_ERROR(CheckJobData({options.job}));
  options.ready_file = absl::GetFlag(FLAGS_ready_file);
  RETURN_IF_ERROR(CheckOutputPath("--ready_file", options.ready_file));
  RETURN_IF_ERROR(ReadPredictedCosts({options.job}, options.predicted_costs));
  return options;
}

bool LabFlagsGiven(int argc, char** argv) {
  return !absl::GetFlag(FLAGS_link_rate).empty() || absl::GetFlag(FLAGS_cleanup) ||
         !RepeatedFlagValues(argc, argv, "slow_link").empty();
}

}  // namespace ringside::cli
