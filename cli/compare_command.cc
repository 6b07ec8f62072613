// `ringside compare`: one local cluster per (job, mode) (cli/compare_mode.h runs and measures
// each), the parity of the two modes' parameters, and the table, JSON, report and timeline.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/compare_mode.h"
#include "cli/compare_prediction.h"
#include "cli/compare_run.h"
#include "cli/compression_variants.h"
#include "cli/lab_bound.h"
#include "cli/ps_variants.h"
#include "cli/report/compare_report.h"
#include "cli/report/model_prediction.h"
#include "cli/report/repeats.h"
#include "cli/report/report_html.h"
#include "cli/scaling_sweep.h"
#include "common/cost_model.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "common/usable_cores.h"
#include "server/ps/ps_client.h"
#include "worker/dataset.h"
#include "worker/gradient_buckets.h"

namespace ringside::cli {

std::string CompareCheckpointDir(const std::string& checkpoint_dir, int job, SyncMode mode) {
  if (checkpoint_dir.empty()) return "";
  return absl::StrCat(checkpoint_dir, "/job-", job + 1, "-", SyncModeName(mode));
}

absl::StatusOr<JobConfig> JobConfigOf(const TrainingOptions& job, ClusterShape shape) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(job.model, job.activation));
  JobConfig config;
  config.workers = shape.workers;
  config.ps_shards = shape.ps_shards;
  config.model = job.model;
  config.data = job.data;
  config.optimizer = std::string(OptimizerName(job.optimizer.kind));
  config.device = job.device;
  config.parameters = static_cast<int64_t>(spec.parameter_count());
  config.steps = job.steps;
  config.batch_size = job.batch_size;
  config.seed = job.seed;
  config.wire_dtype = std::string(WireDtypeName(job.wire_dtype));
  config.element_bytes = static_cast<int>(WireBytesPerElement(job.wire_dtype));
  config.bucket_bytes = job.bucket_bytes;
  for (const worker::GradientBucket& bucket : worker::PlanBuckets(spec, job.bucket_bytes)) {
    config.ring_buckets.push_back(bucket.range.size());
  }
  const absl::StatusOr<worker::DataSpec> data = worker::ParseDataSpec(job.data);
  config.has_test_set = data.ok() && data->kind == worker::DataSpec::Kind::kFashionMnist;
  config.eval_every = job.eval_every;
  const MemoryBound bound =
      PredictMemoryBound(config.parameters, shape.ps_shards, job.optimizer.kind);
  config.worker_memory_bound_bytes = bound.worker_bytes;
  config.shard_memory_bound_bytes = bound.shard_bytes;
  return config;
}

namespace {

// A job's comparison before any of its modes ran: its configuration, both modes "not run".
absl::StatusOr<JobComparison> NewComparison(const CompareOptions& options,
                                            const TrainingOptions& job, ClusterShape shape) {
  JobComparison comparison;
  ASSIGN_OR_RETURN(comparison.config, JobConfigOf(job, shape));
  comparison.config.target_accuracy = options.target_accuracy;
  comparison.config.ps_window_bytes =
      options.ps_window_bytes > 0 ? options.ps_window_bytes : server::kDefaultPsWindowBytes;
  if (options.link_rate.has_value()) {
    comparison.config.link_rate = options.link_rate->text;
    comparison.config.link_burst_bytes = options.link_burst_bytes;
    for (const auto& [host, rate] : options.slow_links)
      comparison.config.slow_links[host] = rate.text;
  }
  comparison.ring.mode = SyncMode::kRing;
  comparison.ps.mode = SyncMode::kPs;
  comparison.ring.failure = comparison.ps.failure = "not run";
  return comparison;
}

// A cluster's worker timelines, appended to the session's with pid = 1000 × the cluster's
// ordinal + rank: unique in the merged file, the rank still readable.
void AppendTimeline(std::vector<worker::TimelineProcess> processes,
                    std::vector<worker::TimelineProcess>& timeline) {
  const int cluster = timeline.empty() ? 0 : timeline.back().pid / 1000 + 1;
  for (worker::TimelineProcess& process : processes) {
    process.pid += 1000 * cluster;
    timeline.push_back(std::move(process));
  }
}

// Runs `spec` and records it in `report`: the run's figures, or why it failed (also in the
// session's `failed`). Returns its final parameters (empty when it failed), or CANCELLED when a
// signal stopped it.
absl::StatusOr<std::vector<float>> RunAndRecord(const ModeRunSpec& spec, ModeReport& report) {
  const CompareSession& session = spec.session;
  const std::string name = absl::StrCat(
      spec.job().model, " in ", SyncModeName(spec.mode), " mode",
      spec.variant.empty() ? "" : absl::StrCat(" (", spec.variant, ")"),
      spec.shape.repeats > 1
          ? absl::StrCat(", repeat ", spec.shape.repeat + 1, " of ", spec.shape.repeats)
          : "");
  std::vector<ProcessFailure> failures;
  absl::StatusOr<ModeRun> run = RunMode(spec, failures);
  if (!run.ok()) {
    if (run.status().code() == absl::StatusCode::kCancelled) return run.status();
    session.failed = Annotate(run.status(), name);
    report.failure = std::string(session.failed.message());
    report.compression = CompressionText(spec.job().compression);
    report.process_failures = std::move(failures);
    session.out << "\n" << name << ": failed: " << session.failed.message() << "\n";
    return std::vector<float>();
  }
  report = std::move(run->report);
  report.process_failures = std::move(failures);
  report.synchronous =
      spec.mode == SyncMode::kRing || (spec.job().staleness == 0 && spec.job().backup_workers == 0);
  if (spec.job().straggler.worker >= 0) report.straggler = StragglerText(spec.job().straggler);
  if (const std::optional<LinkRate>& rate = session.options.link_rate; rate.has_value()) {
    // ringside lab: the links' bound on the sync, and what it waits for
    FillLabBound({*rate, session.options.slow_links}, spec.config, spec.shape.ps_shards, report,
                 WorkersNotWaitedFor(spec.job(), report.final_world));
  }
  if (session.options.predicted_costs.has_value()) {
    ClusterCosts costs = *session.options.predicted_costs;
    // The lab's own probe measured its links; a probe file's are another cluster's.
    if (session.options.link_rate.has_value() && session.options.lab_probe_out.empty()) {
      costs.link_bytes_per_second = session.options.link_rate->payload_bytes_per_second();
    }
    // Every process of compare's and lab's clusters runs on this host.
    FillPrediction(costs, spec.job(), spec.config, spec.shape.ps_shards, UsableCores(), report);
  }
  if (session.timeline != nullptr) AppendTimeline(std::move(run->timeline), *session.timeline);
  return std::move(run->parameters);
}

// A run beside the plain modes: its mode, its name in the reports (the --ps_variants item, the
// --compression_variants codec) and the job as it trains it.
struct VariantRun {
  SyncMode mode = SyncMode::kPs;
  std::string name;
  TrainingOptions training;
};

// Runs each of `runs` into a report of its own appended to `reports` (named, and failed, also
// when not run): the one way the --ps_variants and --compression_variants rows run. Returns each
// run's final parameters (empty for one that did not run to its end).
absl::StatusOr<std::vector<std::vector<float>>> RunVariants(const CompareSession& session,
                                                            int job_index, ClusterShape shape,
                                                            const JobConfig& config,
                                                            const std::vector<VariantRun>& runs,
                                                            std::vector<ModeReport>& reports) {
  std::vector<std::vector<float>> params;
  reports.reserve(reports.size() + runs.size());
  for (const VariantRun& run : runs) {
    ModeReport& report = reports.emplace_back();
    report.mode = run.mode;
    report.variant = run.name;  // also when it is not run
    report.compression = CompressionText(run.training.compression);
    if (!session.failed.ok()) {
      report.failure = "not run: an earlier run failed";
      params.emplace_back();
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<float> final_params,
                     RunAndRecord(ModeRunSpec{session, job_index, config, shape, run.mode,
                                              run.training, run.name},
                                  report));
    params.push_back(std::move(final_params));
  }
  return params;
}

// Runs every --ps_variants item of the job as a ps run (the first is also `comparison.ps`).
// Returns the first variant's final parameters, for the parity.
absl::StatusOr<std::vector<float>> RunPsVariants(const CompareSession& session, int job_index,
                                                 ClusterShape shape, JobComparison& comparison) {
  std::vector<VariantRun> runs;
  for (const PsVariant& variant : session.options.ps_variants) {
    ASSIGN_OR_RETURN(TrainingOptions training,
                     WithPsVariant(session.options.jobs[job_index], variant));
    runs.push_back({SyncMode::kPs, variant.name, std::move(training)});
  }
  ASSIGN_OR_RETURN(
      std::vector<std::vector<float>> params,
      RunVariants(session, job_index, shape, comparison.config, runs, comparison.ps_variants));
  comparison.ps = comparison.ps_variants.front();
  return std::move(params.front());
}

// Every --compression_variants codec once in each of `modes` it runs in (RunsCompressed), after
// the round's plain runs, into comparison.compression_variants.
absl::Status RunCompressionVariants(const CompareSession& session, int job_index,
                                    ClusterShape shape, const std::vector<SyncMode>& modes,
                                    JobComparison& comparison) {
  std::vector<VariantRun> runs;
  for (const Compression& compression : session.options.compression_variants) {
    for (SyncMode mode : modes) {
      if (!RunsCompressed(compression, mode)) continue;
      ASSIGN_OR_RETURN(TrainingOptions training,
                       WithCompression(session.options.jobs[job_index], compression));
      runs.push_back({mode, CompressionText(compression), std::move(training)});
    }
  }
  return RunVariants(session, job_index, shape, comparison.config, runs,
                     comparison.compression_variants)
      .status();
}

// --colocate: the job once more in ps mode on a cluster of `shape` with S = N, shard i beside
// worker i, into comparison.ps_colocated.
absl::Status RunColocated(const CompareSession& session, int job_index, ClusterShape shape,
                          JobComparison& comparison) {
  ModeReport& report = comparison.ps_colocated.emplace();
  report.mode = SyncMode::kPs;
  report.colocated = true;
  report.failure = "not run: an earlier run failed";
  if (!session.failed.ok()) return absl::OkStatus();
  shape.ps_shards = shape.workers;
  shape.colocated = true;
  return RunAndRecord(ModeRunSpec{session, job_index, comparison.config, shape, SyncMode::kPs,
                                  session.options.jobs[job_index]},
                      report)
      .status();
}

// The parity of the two modes' final parameters, when both ran.
void CheckParity(const std::vector<float>& ring, const std::vector<float>& ps,
                 JobComparison& comparison) {
  if (ring.empty() || ring.size() != ps.size()) return;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ring.size(); ++i) {
    diff = std::max(diff, std::abs(double{ring[i]} - ps[i]));
    scale = std::max(scale, std::abs(double{ring[i]}));
  }
  comparison.parity_checked = true;
  comparison.max_abs_param_diff = diff;
  comparison.max_rel_param_diff = scale > 0 ? diff / scale : diff;
}

// --timeline's directory, checked before any cluster runs, not after minutes of them.
absl::Status CheckTimelineWritable(const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  const size_t slash = path.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  if (access(parent.c_str(), W_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--timeline=", path, ": cannot write into ",
                                                   parent,
                                                   " (create the directory or pick another path)"));
  }
  return absl::OkStatus();
}

// --json, --report and --timeline, each announced once written.
absl::Status WriteOutputs(const CompareOptions& options, const CompareReport& report,
                          const std::vector<worker::TimelineProcess>* timeline, std::ostream& out) {
  if (!options.json_file.empty()) {
    RETURN_IF_ERROR(WriteCompareJsonFile(report, options.json_file));
    out << "JSON: " << options.json_file << "\n";
  }
  if (!options.report_file.empty()) {
    RETURN_IF_ERROR(WriteHtmlReportFile(report, options.report_file));
    out << "report: " << options.report_file << "\n";
  }
  if (timeline != nullptr) {
    RETURN_IF_ERROR(Annotate(WriteMergedTimeline(*timeline, options.timeline_file), "--timeline"));
    out << "timeline: " << options.timeline_file << " (" << timeline->size()
        << " worker processes; open in ui.perfetto.dev or chrome://tracing)\n";
  }
  return absl::OkStatus();
}

// One job at the options' cluster size, in --repeats rounds: each round runs the ring, then ps
// (each variant), then each --compression_variants run, then --colocate's ps, so the machine's
// drift falls on every mode alike; the rounds are summarised into one comparison
// (cli/report/repeats.h). A failure ends the rounds.
absl::StatusOr<JobComparison> RunRounds(const CompareSession& session, int job_index) {
  const CompareOptions& options = session.options;
  std::vector<JobComparison> rounds;
  for (int r = 0; r < options.repeats && (r == 0 || session.failed.ok()); ++r) {
    ClusterShape shape{options.cluster.workers, options.cluster.ps_shards};
    shape.repeat = r;
    shape.repeats = options.repeats;
    ASSIGN_OR_RETURN(JobComparison round,
                     RunJobComparison(session, job_index, shape, {SyncMode::kRing, SyncMode::kPs}));
    if (options.colocate) RETURN_IF_ERROR(RunColocated(session, job_index, shape, round));
    rounds.push_back(std::move(round));
  }
  return MergeRounds(std::move(rounds));
}

}  // namespace

absl::StatusOr<JobComparison> RunJobComparison(const CompareSession& session, int job_index,
                                               ClusterShape shape,
                                               const std::vector<SyncMode>& modes) {
  ASSIGN_OR_RETURN(JobComparison comparison,
                   NewComparison(session.options, session.options.jobs[job_index], shape));
  std::vector<float> ring_params, ps_params;
  const TrainingOptions& job = session.options.jobs[job_index];
  for (SyncMode mode : modes) {
    std::vector<float>& params = mode == SyncMode::kRing ? ring_params : ps_params;
    if (mode == SyncMode::kPs && !session.options.ps_variants.empty()) {
      ASSIGN_OR_RETURN(params, RunPsVariants(session, job_index, shape, comparison));
      continue;
    }
    ModeReport& report = mode == SyncMode::kRing ? comparison.ring : comparison.ps;
    if (!session.failed.ok()) {
      report.failure = "not run: an earlier run failed";
      continue;
    }
    ASSIGN_OR_RETURN(
        params,
        RunAndRecord(ModeRunSpec{session, job_index, comparison.config, shape, mode, job}, report));
  }
  CheckParity(ring_params, ps_params, comparison);
  RETURN_IF_ERROR(RunCompressionVariants(session, job_index, shape, modes, comparison));
  return comparison;
}

absl::Status RunCompare(const CompareOptions& options, const TerminationSignals& signals,
                        std::ostream& out) {
  RETURN_IF_ERROR(CheckTimelineWritable(options.timeline_file));
  CompareReport report;
  std::vector<worker::TimelineProcess> timeline;
  absl::Status failed;  // the first mode that failed; the runs after it are not started
  const CompareSession session{options, signals, out, failed,
                               options.timeline_file.empty() ? nullptr : &timeline};
  const bool sweep = IsSweep(options);
  for (size_t job_index = 0; job_index < options.jobs.size() && failed.ok(); ++job_index) {
    JobComparison comparison;
    if (sweep) {
      ASSIGN_OR_RETURN(comparison, RunScalingSweep(session, static_cast<int>(job_index)));
    } else {
      ASSIGN_OR_RETURN(comparison, RunRounds(session, static_cast<int>(job_index)));
    }
    out << "\n";
    PrintComparisonTable(comparison, out);
    if (sweep) PrintScalingTable(comparison, out);
    out.flush();
    report.jobs.push_back(std::move(comparison));
  }
  RETURN_IF_ERROR(WriteOutputs(options, report, session.timeline, out));
  return failed;
}

}  // namespace ringside::cli
