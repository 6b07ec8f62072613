// `ringside plan` (cli/commands.h): the costs from a probe file, or a probe of this host on
// loopback, with --link_rate and --link_latency in place of the measured link; then the step
// model, fitted first to the runs of --calibrate, on every (N, S) asked for, as a table, --json
// and --chart.
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_probe_run.h"
#include "cli/commands.h"
#include "cli/plan_calibration.h"
#include "cli/plan_report.h"
#include "common/file_util.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "launch/certificates.h"
#include "launch/temp_dir.h"
#include "server/ps/ps_client.h"
#include "worker/gradient_buckets.h"

namespace ringside::cli {
namespace {

// The probe's links travel through the same transport security as training: a throw-away CA
// (compare's) unless --insecure. `dir` keeps the certificates while the probe runs.
absl::StatusOr<TransportSecurity> ProbeSecurity(bool tls, std::optional<launch::TempDir>& dir) {
  if (!tls) return TransportSecurity::Plaintext();
  ASSIGN_OR_RETURN(launch::TempDir made, launch::TempDir::Create("ringside-probe"));
  dir.emplace(std::move(made));
  ASSIGN_OR_RETURN(const launch::CertificateAuthority ca,
                   launch::CertificateAuthority::Create(dir->path()));
  ASSIGN_OR_RETURN(const TlsFiles files, ca.Issue("probe"));
  return TransportSecurity::LoadMutualTls(files);
}

absl::StatusOr<ClusterProbe> ProbeThisHost(const PlanOptions& options) {
  ProbeOptions probe;
  probe.model = options.job.model;
  probe.activation = options.job.activation;
  if (!options.probe_targets.empty()) {  // each member profiles itself on its own --device
    probe.members = options.probe_targets;
    probe.links.token = options.probe_token;
    probe.links.security = options.probe_security;
    return RunClusterProbe(probe);
  }
  std::optional<launch::TempDir> dir;
  ASSIGN_OR_RETURN(probe.links.security, ProbeSecurity(options.tls, dir));
  probe.device = options.job.device == "auto" ? "cpu" : options.job.device;
  return RunLoopbackProbe(probe, options.probe_members);
}

void SayWhatIsProbed(const PlanOptions& options, std::ostream& out) {
  if (options.probe_targets.empty()) {
    out << "probing this host on loopback (" << options.probe_members << " links, "
        << (options.tls ? "mutual TLS" : "plaintext") << ", the job's model)...\n";
  } else {
    out << "probing the links to " << options.probe_targets.size() << " members ("
        << absl::StrJoin(options.probe_targets, ", ")
        << ") and each member's profile of itself (the job's model on its own device and "
           "cores)...\n";
  }
}

// The costs and what they came from.
absl::StatusOr<std::pair<ClusterCosts, std::string>> PlanCosts(const PlanOptions& options,
                                                               std::ostream& out) {
  ClusterProbe probe;
  std::string source;
  if (!options.probe_file.empty()) {
    ASSIGN_OR_RETURN(probe, ReadClusterProbe(options.probe_file));
    RETURN_IF_ERROR(CheckProbeMatchesModel(probe, options.probe_file, options.job.model,
                                           options.job.activation));
    source = "probe " + options.probe_file;
  } else {
    SayWhatIsProbed(options, out);
    ASSIGN_OR_RETURN(probe, ProbeThisHost(options));
    source = options.probe_targets.empty() ? "a probe of this host" : "a probe of the members";
    if (!options.probe_out.empty()) {
      RETURN_IF_ERROR(WriteClusterProbe(options.probe_out, probe));
      out << "probe written to " << options.probe_out << "\n";
      source = "probe " + options.probe_out;
    }
  }
  ClusterCosts costs = probe.costs;
  if (options.link_rate.has_value()) {
    costs.link_bytes_per_second = options.link_rate->payload_bytes_per_second();
    absl::StrAppend(&source, ", links at --link_rate=", options.link_rate->text);
  }
  if (options.link_latency.has_value()) {
    costs.link_latency_seconds = absl::ToDoubleSeconds(*options.link_latency);
    absl::StrAppend(&source, ", --link_latency=", absl::FormatDuration(*options.link_latency));
  }
  return std::make_pair(costs, source);
}

absl::StatusOr<PlanInput> PlanInputOf(const PlanOptions& options, std::ostream& out) {
  const TrainingOptions& job = options.job;
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(job.model, job.activation));
  PlanInput input;
  input.model = job.model;
  input.activation = job.activation;
  input.wire_dtype = std::string(WireDtypeName(job.wire_dtype));
  input.job.parameters = spec.parameter_count();
  input.job.element_bytes = static_cast<int>(WireBytesPerElement(job.wire_dtype));
  input.job.global_batch = job.batch_size;
  input.job.buckets = job.bucket_bytes > 0
                          ? static_cast<int>(worker::PlanBuckets(spec, job.bucket_bytes).size())
                          : 1;
  input.job.steps_to_target = options.steps_to_target;
  input.job.ps_segment_bytes = server::PsPushSegmentBytes(options.ps_window_bytes);
  input.worker_counts = options.worker_counts;
  input.shard_counts = options.shard_counts;
  input.shape.straggler = job.straggler.worker;
  input.shape.straggler_factor = job.straggler.factor;
  // The variants' own settings when the job has them, else the smallest that does anything.
  input.shape.backup_workers = job.backup_workers > 0 ? static_cast<int>(job.backup_workers) : 1;
  input.shape.staleness = job.staleness > 0 ? static_cast<int>(job.staleness) : 2;
  input.shape.shared_host_cores = options.shared_host_cores;
  ASSIGN_OR_RETURN(std::tie(input.costs, input.costs_source), PlanCosts(options, out));
  if (options.shared_host_cores > 0) {
    absl::StrAppend(&input.costs_source, ", every process on this host's ",
                    options.shared_host_cores, " cores (--one_host)");
  }
  return input;
}

// The runs of every --calibrate file, read before anything is probed.
absl::StatusOr<std::vector<MeasuredRun>> CalibrationRuns(const PlanOptions& options) {
  std::vector<MeasuredRun> runs;
  for (const std::string& path : options.calibrate_files) {
    ASSIGN_OR_RETURN(std::vector<MeasuredRun> file_runs,
                     ReadMeasuredRuns("--calibrate", path, options.job.model));
    if (file_runs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--calibrate=", path, ": no run of --model=", options.job.model, " in it"));
    }
    runs.insert(runs.end(), file_runs.begin(), file_runs.end());
  }
  return runs;
}

}  // namespace

absl::Status RunPlan(const PlanOptions& options, std::ostream& out) {
  // The measured files first: a bad one is refused before anything is probed or printed.
  std::vector<MeasuredStep> measured;
  if (!options.measured_file.empty()) {
    ASSIGN_OR_RETURN(const std::vector<MeasuredRun> runs,
                     ReadMeasuredRuns("--measured", options.measured_file, options.job.model));
    for (const MeasuredRun& run : runs) {
      measured.push_back({std::string(PlanModeName(run.mode)), run.workers, run.step_seconds});
    }
  }
  ASSIGN_OR_RETURN(const std::vector<MeasuredRun> calibration_runs, CalibrationRuns(options));
  ASSIGN_OR_RETURN(PlanInput input, PlanInputOf(options, out));
  if (!calibration_runs.empty()) {
    ASSIGN_OR_RETURN(input.calibration, FitPlanCalibration(input, calibration_runs));
    input.calibration_source = absl::StrJoin(options.calibrate_files, ", ");
  }
  ASSIGN_OR_RETURN(const std::vector<PlanCell> cells, PlanCells(input));
  out << PlanTable(input, cells);
  if (!options.json_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(options.json_file, PlanJson(input, cells).dump(2) + "\n"));
    out << "JSON written to " << options.json_file << "\n";
  }
  if (!options.chart_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(options.chart_file, PlanChartSvg(input, measured) + "\n"));
    out << "chart written to " << options.chart_file;
    if (!options.measured_file.empty()) {
      out << ", with " << measured.size() << " measured steps of " << options.job.model << " from "
          << options.measured_file;
    }
    out << "\n";
  }
  return absl::OkStatus();
}

}  // namespace ringside::cli
