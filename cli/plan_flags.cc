// `ringside plan`'s own flags and the options it reads from them (cli/ringside_flags.h): every
// value checked before anything is probed, refused in one line naming its flag.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/ringside_flags.h"
#include "cli/scaling_sweep.h"
#include "common/flags/command_line.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/link_rate.h"
#include "common/model_spec.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "common/training_options.h"
#include "common/usable_cores.h"
#include "server/controller/job_spec.h"
#include "server/ps/ps_client.h"

ABSL_FLAG(std::string, link_latency, "",
          "plan: each message's latency on the cluster's links (e.g. 50us, 1ms), in place of "
          "the probe's");
ABSL_FLAG(int64_t, probe_members, 3, "plan: loopback links the probe measures, 1 to 64");
ABSL_FLAG(std::string, probe_targets, "",
          "plan: probe these members' links instead of loopback: HOST:PORT of each, "
          "comma-separated (workers started with --probe_token_file; with the cluster's "
          "--tls_ca/--tls_cert/--tls_key or --insecure)");
ABSL_FLAG(std::string, probe_token_file, "",
          "plan: the file holding the secret the --probe_targets members were given");
ABSL_FLAG(int64_t, steps_to_target, 0,
          "plan: steps the job takes to its target (from a run, or given); 0: unknown, no time "
          "to target");
ABSL_FLAG(std::string, chart, "",
          "plan: write an SVG chart of the predicted step time against N (1 to 1024) here");
ABSL_FLAG(std::vector<std::string>, calibrate, {},
          "plan: ringside compare or lab --json files (comma-separated) of this model whose "
          "measured steps and syncs the model is fitted to before it predicts");
ABSL_FLAG(bool, one_host, false,
          "plan: every process of the cluster on this host, as ringside compare and lab run "
          "them: the workers' compute and every process's sync CPU share this host's cores");
ABSL_FLAG(std::string, measured, "",
          "plan: a ringside compare --json file whose measured steps --chart lays on the curves");

namespace ringside::cli {
namespace {

constexpr int kMaxProbeTargets = 1024;

// --probe_targets: each HOST:PORT, the secret and the cluster's transport security.
absl::Status ProbeTargetsFromFlags(int argc, char** argv, PlanOptions& options) {
  const SecurityFlags security = SecurityFlagsFromCommandLine();
  const std::string token_file = absl::GetFlag(FLAGS_probe_token_file);
  const std::string listed = absl::GetFlag(FLAGS_probe_targets);
  if (listed.empty()) {
    if (!token_file.empty() || !security.tls.ca.empty() || !security.tls.cert.empty() ||
        !security.tls.key.empty()) {
      return absl::InvalidArgumentError(
          "--probe_token_file and --tls_ca/--tls_cert/--tls_key are for --probe_targets: a "
          "loopback probe makes its own secret and CA");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<HostPort>> parsed = ParseHostPortList(listed);
  if (!parsed.ok()) return Annotate(parsed.status(), "--probe_targets");
  const std::vector<HostPort>& targets = *parsed;
  if (!options.probe_file.empty() || FlagGiven(argc, argv, "probe_members")) {
    return absl::InvalidArgumentError(
        "--probe_targets probes the members it names: give neither --probe nor --probe_members");
  }
  if (targets.size() > kMaxProbeTargets) {
    return absl::InvalidArgumentError(absl::StrCat("--probe_targets names ", targets.size(),
                                                   " members; at most ", kMaxProbeTargets));
  }
  for (const HostPort& target : targets) {
    if (target.port == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--probe_targets: ", target.ToString(),
                                                     " has port 0, which cannot be dialled"));
    }
    options.probe_targets.push_back(target.ToString());
  }
  ASSIGN_OR_RETURN(options.probe_token, server::ReadTokenFile(token_file, "--probe_token_file"));
  ASSIGN_OR_RETURN(options.probe_security, ResolveSecurityFlags(security));
  return absl::OkStatus();
}

// Where the costs come from: --probe, --probe_targets or loopback (--probe_members).
absl::Status ProbeSourceFromFlags(int argc, char** argv, PlanOptions& options) {
  options.probe_file = absl::GetFlag(FLAGS_probe);
  options.probe_out = absl::GetFlag(FLAGS_probe_out);
  if (!options.probe_file.empty() && !options.probe_out.empty()) {
    return absl::InvalidArgumentError(
        "--probe reads a probe file, --probe_out writes a new one: give one of them");
  }
  RETURN_IF_ERROR(CheckOutputPath("--probe_out", options.probe_out));
  const int64_t members = absl::GetFlag(FLAGS_probe_members);
  if (members < 1 || members > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--probe_members=", members, ": must be 1 to 64"));
  }
  options.probe_members = static_cast<int>(members);
  options.tls = !SecurityFlagsFromCommandLine().insecure;
  return ProbeTargetsFromFlags(argc, argv, options);
}

}  // namespace

// plan: the step model's inputs; the costs' sources are read in RunPlan.
absl::StatusOr<PlanOptions> PlanOptionsFromFlags(int argc, char** argv) {
  PlanOptions options;
  if (!RepeatedFlagValues(argc, argv, "slow_link").empty()) {
    return absl::InvalidArgumentError(
        "--slow_link is for `ringside lab`; plan's slow node is --straggler=worker-N:F");
  }
  ASSIGN_OR_RETURN(options.job, TrainingOptionsFromFlags());
  if (!FlagGiven(argc, argv, "device")) options.job.device = "cpu";
  RETURN_IF_ERROR(ModelSpec::Parse(options.job.model, options.job.activation).status());
  ASSIGN_OR_RETURN(options.worker_counts,
                   ParseCountList("--workers", absl::GetFlag(FLAGS_workers), 1 << 20));
  ASSIGN_OR_RETURN(options.shard_counts,
                   ParseCountList("--ps_shards", absl::GetFlag(FLAGS_ps_shards), 1 << 20));
  RETURN_IF_ERROR(ProbeSourceFromFlags(argc, argv, options));
  if (const int64_t window = absl::GetFlag(FLAGS_ps_window_bytes); window != 0) {
    RETURN_IF_ERROR(server::CheckPsWindowBytes(window));
    options.ps_window_bytes = static_cast<uint64_t>(window);
  }
  if (!absl::GetFlag(FLAGS_link_rate).empty()) {
    absl::StatusOr<LinkRate> rate = ParseLinkRate(absl::GetFlag(FLAGS_link_rate));
    if (!rate.ok()) {
      return absl::InvalidArgumentError("--link_rate: " + std::string(rate.status().message()));
    }
    options.link_rate = *rate;
  }
  if (const std::string latency = absl::GetFlag(FLAGS_link_latency); !latency.empty()) {
    absl::Duration duration;
    if (!absl::ParseDuration(latency, &duration) || duration < absl::ZeroDuration() ||
        duration > absl::Seconds(60)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--link_latency=", latency, ": give a duration from 0 to 60s, e.g. 50us or 2ms"));
    }
    options.link_latency = duration;
  }
  options.steps_to_target = absl::GetFlag(FLAGS_steps_to_target);
  if (options.steps_to_target < 0 || options.steps_to_target > kUntilStoppedSteps) {
    return absl::InvalidArgumentError("--steps_to_target must be >= 0 (0: unknown)");
  }
  if (absl::GetFlag(FLAGS_one_host)) options.shared_host_cores = UsableCores();
  options.json_file = absl::GetFlag(FLAGS_json);
  options.chart_file = absl::GetFlag(FLAGS_chart);
  options.measured_file = absl::GetFlag(FLAGS_measured);
  options.calibrate_files = absl::GetFlag(FLAGS_calibrate);
  RETURN_IF_ERROR(CheckOutputPath("--json", options.json_file));
  RETURN_IF_ERROR(CheckOutputPath("--chart", options.chart_file));
  if (!options.measured_file.empty() && options.chart_file.empty()) {
    return absl::InvalidArgumentError("--measured lays measured steps on --chart: give --chart");
  }
  return options;
}

}  // namespace ringside::cli
