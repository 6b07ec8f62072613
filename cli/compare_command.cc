// `ringside compare`: one local cluster per (job, mode), measured from the processes' own
// /metrics, result files and step traces.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/accuracy_summary.h"
#include "cli/commands.h"
#include "cli/compare_report.h"
#include "cli/compare_run.h"
#include "cli/model_prediction.h"
#include "cli/progress.h"
#include "cli/report_html.h"
#include "cli/scaling_sweep.h"
#include "common/cost_model.h"
#include "common/file_util.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "launch/local_cluster.h"
#include "launch/prometheus_text.h"
#include "launch/temp_dir.h"
#include "worker/dataset.h"

namespace ringside::cli {

using launch::ClusterProcess;
using launch::LocalCluster;
using launch::LocalClusterOptions;
namespace {

struct ModeRun {
  ModeReport report;
  std::vector<float> parameters;
  std::vector<worker::TimelineProcess> timeline;
};

// The first worker's loss at every step, against seconds since the cluster was started,
// thinned evenly to at most kMaxLossPoints (the last step always kept).
std::vector<LossPoint> LossOverTime(const StepTrace& trace, absl::Time cluster_start) {
  std::vector<LossPoint> points;
  const double origin = absl::ToDoubleSeconds(cluster_start - absl::UnixEpoch());
  for (const StepTraceLine& line : trace.lines) {
    if (line.unix_seconds > 0) points.push_back({line.unix_seconds - origin, line.step, line.loss});
  }
  if (points.size() <= kMaxLossPoints) return points;
  std::vector<LossPoint> thinned;
  const double stride = static_cast<double>(points.size() - 1) / (kMaxLossPoints - 1);
  for (size_t i = 0; i < kMaxLossPoints; ++i) {
    thinned.push_back(points[static_cast<size_t>(std::lround(i * stride))]);
  }
  return thinned;
}

std::string TimelinePath(const std::string& dir, int worker) {
  return absl::StrCat(dir, "/worker-", worker, ".timeline.json");
}

// Every worker's timeline file (written before its result file, so complete by now), each
// process named "<mode> N=<n>[ S=<s>] <model>: worker-<rank>". A missing or unreadable file is
// an event of the run, not a failure of it.
std::vector<worker::TimelineProcess> ReadTimelines(const std::string& dir, int workers,
                                                   SyncMode mode, ClusterShape shape,
                                                   const std::string& model,
                                                   std::vector<std::string>& events) {
  std::vector<worker::TimelineProcess> out;
  for (int i = 0; i < workers; ++i) {
    absl::StatusOr<std::string> text = ReadFileToString(TimelinePath(dir, i));
    absl::StatusOr<std::vector<worker::TimelineProcess>> processes =
        text.ok() ? worker::ParseChromeTrace(*text)
                  : absl::StatusOr<std::vector<worker::TimelineProcess>>(text.status());
    if (!processes.ok()) {
      events.push_back(
          absl::StrCat("worker-", i, "'s timeline is left out: ", processes.status().message()));
      continue;
    }
    for (worker::TimelineProcess& process : *processes) {
      process.name = absl::StrCat(SyncModeName(mode), " N=", shape.workers,
                                  mode == SyncMode::kPs ? absl::StrCat(" S=", shape.ps_shards) : "",
                                  " ", model, ": ", process.name);
      out.push_back(std::move(process));
    }
  }
  return out;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5))];
}

// Fills the traffic figures of `report` from every process's /metrics.
absl::Status MeasureTraffic(LocalCluster& cluster, SyncMode mode, const JobConfig& config,
                            ModeReport& report) {
  std::vector<launch::Sample> all;
  for (auto& process : cluster.processes()) {
    if (!process->process.running()) continue;
    ASSIGN_OR_RETURN(std::vector<launch::Sample> samples,
                     launch::FetchMetrics(process->host, process->metrics_port));
    all.insert(all.end(), samples.begin(), samples.end());
  }
  const double steps = std::max<double>(1, report.steps);
  std::map<std::pair<std::string, std::string>, LinkTraffic> links;
  std::map<std::string, double> sent, received;
  for (const launch::Sample& s : all) {
    if (!s.labels.count("mode") || s.labels.at("mode") != SyncModeName(mode)) continue;
    const std::string src = s.labels.count("src") ? s.labels.at("src") : "";
    const std::string dst = s.labels.count("dst") ? s.labels.at("dst") : "";
    LinkTraffic& link = links[{src, dst}];
    link.src = src;
    link.dst = dst;
    if (s.name == "ringside_link_bytes_total") {
      link.bytes_per_step += s.value / steps;
      sent[src] += s.value / steps;
    } else if (s.name == "ringside_link_expected_bytes_total") {
      link.expected_bytes_per_step += s.value / steps;
    } else if (s.name == "ringside_link_received_bytes_total") {
      received[dst] += s.value / steps;
    }
  }
  for (auto& [key, link] : links) {
    if (link.bytes_per_step > 0 || link.expected_bytes_per_step > 0) report.links.push_back(link);
  }
  report.bytes_per_worker_per_step = sent["worker-0"];
  const ModelBytes model = PredictBytesPerStep(mode, config.parameters, report.final_world,
                                               config.ps_shards, config.element_bytes);
  report.expected_bytes_per_worker_per_step = model.per_worker;
  auto busiest = std::max_element(received.begin(), received.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  if (busiest != received.end()) {
    report.busiest_node = busiest->first;
    report.busiest_node_bytes_per_step = busiest->second;
  }
  report.busiest_node_expected_bytes_per_step = model.busiest_node;
  const std::string label(SyncModeName(mode));
  auto phase_sum = [&](const std::string& name, const std::string& phase) {
    return launch::SumSamples(all, name, {{"phase", phase}, {"mode", label}});
  };
  const double compute = phase_sum("ringside_step_seconds_sum", "compute");
  const double sync = phase_sum("ringside_step_seconds_sum", "sync");
  const double update = phase_sum("ringside_step_seconds_sum", "update");
  const double count = phase_sum("ringside_step_seconds_count", "compute");
  if (count > 0) {
    report.phases = PhaseSeconds{compute / count, sync / count, update / count};
    const double total = compute + sync + update;
    report.sync_share = total > 0 ? sync / total : 0;
  }
  return absl::OkStatus();
}

// What a process that ended without being asked to said last, for the report.
ProcessFailure FailureOf(const launch::ProcessEnd& end) {
  return ProcessFailure{end.name, end.pid, end.how, end.log, end.last_lines};
}

std::string PhaseName(const TrainingOptions& job, ClusterShape shape, SyncMode mode) {
  return absl::StrCat(
      job.model, " ", SyncModeName(mode),
      shape.swept ? absl::StrCat(" N=", shape.workers, " S=", shape.ps_shards) : "");
}

// One mode's cluster in `dir`, run to its end and measured. Every process that ends without
// being asked to is printed with its log's last lines and added to `failures`, which the caller
// keeps even when the run fails.
absl::StatusOr<ModeRun> RunCluster(const std::string& dir, const CompareOptions& options,
                                   int job_index, const TrainingOptions& job,
                                   const JobConfig& config, ClusterShape shape, SyncMode mode,
                                   bool with_timeline, const TerminationSignals& signals,
                                   std::ostream& out, std::vector<ProcessFailure>& failures) {
  LocalClusterOptions cluster_options;
  cluster_options.bin_dir = options.cluster.bin_dir;
  cluster_options.dir = dir;
  cluster_options.workers = shape.workers;
  cluster_options.ps_shards = shape.ps_shards;
  if (with_timeline) {
    for (int i = 0; i < shape.workers; ++i) {
      cluster_options.flags_of_worker[i] = {
          "--timeline_file=" + TimelinePath(dir, i),
          absl::StrCat("--timeline_capacity=", options.timeline_capacity)};
    }
  }
  cluster_options.mode = mode;
  cluster_options.training = job;
  cluster_options.heartbeat_timeout = options.cluster.heartbeat_timeout;
  // A controller or shard that dies fails the run (restart_servers stays off): a restart in the
  // middle would skew the very timings and byte counts being compared.
  cluster_options.checkpoint_dir =
      CompareCheckpointDir(options.cluster.checkpoint_dir, job_index, mode);
  if (shape.swept && !cluster_options.checkpoint_dir.empty()) {
    absl::StrAppend(&cluster_options.checkpoint_dir, "-n", shape.workers, "-s", shape.ps_shards);
  }
  cluster_options.checkpoint_every = options.cluster.checkpoint_every;
  cluster_options.tls = options.cluster.tls;
  cluster_options.host_of = options.host_of;
  const absl::Time cluster_start = absl::Now();
  ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster, LocalCluster::Start(cluster_options));
  ModeRun run;
  run.report.mode = mode;
  const std::string phase = PhaseName(job, shape, mode);
  out << phase << ": started";
  for (auto& process : cluster->processes()) {
    out << " " << process->name << " (pid " << process->process.pid() << ")";
  }
  out << (options.cluster.tls ? ", mutual TLS" : ", plaintext (--insecure)")
      << "; reach it with: " << absl::StrJoin(cluster->CtlCommand(mode), " ") << "\n";
  out.flush();
  PhaseProgress progress(phase, job.steps, isatty(STDOUT_FILENO) == 1, out);
  std::vector<TrainResultFile> results;
  auto report_losses = [&] {
    for (const launch::ProcessEnd& lost : cluster->TakeLostWorkerReports()) {
      run.report.events.push_back(absl::StrCat(lost.Summary(), "; the others went on without it"));
      failures.push_back(FailureOf(lost));
      progress.Break();
      out << phase << ": " << run.report.events.back() << "\n" << lost.Tail() << "\n";
      out.flush();
    }
  };
  while (true) {
    if (signals.received()) return absl::CancelledError("stopped by a signal; every child stopped");
    report_losses();
    if (std::optional<launch::ProcessEnd> dead = cluster->DeadChild()) {
      failures.push_back(FailureOf(*dead));
      return absl::AbortedError(absl::StrCat("a process of the cluster died: ", dead->Describe()));
    }
    absl::StatusOr<std::vector<TrainResultFile>> done =
        cluster->WaitForResults(absl::Milliseconds(200), [&] { return signals.received(); });
    report_losses();  // found inside the wait
    if (done.ok()) {
      results = *std::move(done);
      break;
    }
    // INTERNAL: the controller or a shard died; the check above names it next time round.
    if (done.status().code() != absl::StatusCode::kDeadlineExceeded &&
        done.status().code() != absl::StatusCode::kInternal) {
      return done.status();
    }
    for (ClusterProcess* w : cluster->workers()) {
      if (w->expected_to_end) continue;
      absl::StatusOr<std::vector<launch::Sample>> samples =
          launch::FetchMetrics(w->host, w->metrics_port);
      if (!samples.ok()) break;
      const std::string label(SyncModeName(mode));
      progress.Update(
          launch::FindSample(*samples, "ringside_steps_total", {{"mode", label}}).value_or(0),
          launch::SumSamples(*samples, "ringside_link_bytes_total", {{"mode", label}}));
      break;
    }
  }
  progress.Break();
  ClusterProcess* first = nullptr;
  for (ClusterProcess* w : cluster->workers()) {
    if (!w->expected_to_end) {
      first = w;
      break;
    }
  }
  if (first == nullptr || results.empty()) {
    return absl::UnavailableError("no worker survived to report a result");
  }
  const TrainResultFile& result = results.front();
  run.report.completed = true;
  run.report.steps = result.steps;
  run.report.final_world = result.world;
  run.report.final_loss = result.final_loss;
  run.report.accuracy = result.accuracy;
  RETURN_IF_ERROR(MeasureTraffic(*cluster, mode, config, run.report));
  std::vector<double> seconds, sync_seconds;
  const StepTrace trace = ReadStepTrace(first->trace_file);
  for (const StepTraceLine& line : trace.lines) {
    seconds.push_back(line.seconds);
    sync_seconds.push_back(line.sync_seconds);
  }
  if (trace.unreadable > 0) {
    run.report.events.push_back(absl::StrCat(first->name, "'s step trace had ", trace.unreadable,
                                             " unreadable lines; they are left out"));
  }
  run.report.loss_over_time = LossOverTime(trace, cluster_start);
  std::vector<std::string> eval_files;  // lost workers' too: one may have been rank 0 a while
  for (ClusterProcess* w : cluster->workers()) eval_files.push_back(w->eval_file);
  ReadAccuracyOverTime(eval_files, options.target_accuracy, run.report);
  if (with_timeline) {
    run.timeline = ReadTimelines(dir, shape.workers, mode, shape, job.model, run.report.events);
  }
  run.report.step_p50 = Percentile(seconds, 0.5);
  run.report.step_p95 = Percentile(seconds, 0.95);
  run.report.sync_p50 = Percentile(sync_seconds, 0.5);
  run.report.sync_min = Percentile(sync_seconds, 0);
  double total = 0;
  for (double s : seconds) total += s;
  if (total > 0) run.report.samples_per_second = job.batch_size * seconds.size() / total;
  ASSIGN_OR_RETURN(const std::string params, ReadFileToString(first->params_file));
  run.parameters.resize(params.size() / sizeof(float));
  std::memcpy(run.parameters.data(), params.data(), params.size());
  cluster->Stop();
  // After Stop every child is reaped, so each peak is final (the kernel's, not a sample).
  for (auto& process : cluster->processes()) {
    const std::optional<launch::ExitStatus>& status = process->process.exit_status();
    run.report.processes.push_back({process->name, status ? status->peak_rss_bytes : 0});
  }
  return run;
}

// RunCluster in a fresh directory, which is kept, and named, when a process failed or the run
// did (not when a signal stopped it): its logs are the post-mortem.
absl::StatusOr<ModeRun> RunMode(const CompareOptions& options, int job_index,
                                const TrainingOptions& job, const JobConfig& config,
                                ClusterShape shape, SyncMode mode, bool with_timeline,
                                const TerminationSignals& signals, std::ostream& out,
                                std::vector<ProcessFailure>& failures) {
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-compare-"));
  absl::StatusOr<ModeRun> run = RunCluster(dir.path(), options, job_index, job, config, shape, mode,
                                           with_timeline, signals, out, failures);
  const bool cancelled = !run.ok() && run.status().code() == absl::StatusCode::kCancelled;
  if (!cancelled && (!run.ok() || !failures.empty())) {
    dir.Keep();
    out << PhaseName(job, shape, mode) << ": the cluster's logs are kept in " << dir.path() << "\n";
    out.flush();
  }
  return run;
}

}  // namespace

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
  const absl::StatusOr<worker::DataSpec> data = worker::ParseDataSpec(job.data);
  config.has_test_set = data.ok() && data->kind == worker::DataSpec::Kind::kFashionMnist;
  config.eval_every = job.eval_every;
  return config;
}

absl::StatusOr<JobComparison> RunJobComparison(const CompareOptions& options, int job_index,
                                               const TrainingOptions& job, ClusterShape shape,
                                               const std::vector<SyncMode>& modes,
                                               const TerminationSignals& signals, std::ostream& out,
                                               absl::Status& failed,
                                               std::vector<worker::TimelineProcess>* timeline) {
  JobComparison comparison;
  ASSIGN_OR_RETURN(comparison.config, JobConfigOf(job, shape));
  comparison.config.target_accuracy = options.target_accuracy;
  if (options.link_rate.has_value()) {
    comparison.config.link_rate = options.link_rate->text;
    comparison.config.link_burst_bytes = options.link_burst_bytes;
  }
  comparison.ring.mode = SyncMode::kRing;
  comparison.ps.mode = SyncMode::kPs;
  comparison.ring.failure = comparison.ps.failure = "not run";
  std::vector<float> ring_params, ps_params;
  for (SyncMode mode : modes) {
    ModeReport& report_of_mode = mode == SyncMode::kRing ? comparison.ring : comparison.ps;
    if (!failed.ok()) {
      report_of_mode.failure = "not run: an earlier run failed";
      continue;
    }
    std::vector<ProcessFailure> failures;
    absl::StatusOr<ModeRun> run = RunMode(options, job_index, job, comparison.config, shape, mode,
                                          timeline != nullptr, signals, out, failures);
    if (!run.ok()) {
      if (run.status().code() == absl::StatusCode::kCancelled) return run.status();
      failed = Annotate(run.status(), absl::StrCat(job.model, " in ", SyncModeName(mode), " mode"));
      report_of_mode.failure = std::string(failed.message());
      report_of_mode.process_failures = std::move(failures);
      out << "\n"
          << job.model << " " << SyncModeName(mode) << ": failed: " << failed.message() << "\n";
      continue;
    }
    report_of_mode = run->report;
    report_of_mode.process_failures = std::move(failures);
    if (options.link_rate.has_value()) {  // ringside lab: the links' bound on the sync
      const JobConfig& config = comparison.config;
      report_of_mode.bound_seconds_per_step = SyncBoundSeconds(
          mode, static_cast<uint64_t>(config.parameters), report_of_mode.final_world,
          config.ps_shards, config.element_bytes, options.link_rate->bytes_per_second());
    }
    (mode == SyncMode::kRing ? ring_params : ps_params) = std::move(run->parameters);
    if (timeline != nullptr) {
      // pid = 1000 × the cluster's ordinal + rank: unique in the merged file, rank readable.
      const int cluster = timeline->empty() ? 0 : timeline->back().pid / 1000 + 1;
      for (worker::TimelineProcess& process : run->timeline) {
        process.pid += 1000 * cluster;
        timeline->push_back(std::move(process));
      }
    }
  }
  if (!ring_params.empty() && ring_params.size() == ps_params.size()) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < ring_params.size(); ++i) {
      diff = std::max(diff, std::abs(double{ring_params[i]} - ps_params[i]));
      scale = std::max(scale, std::abs(double{ring_params[i]}));
    }
    comparison.parity_checked = true;
    comparison.max_abs_param_diff = diff;
    comparison.max_rel_param_diff = scale > 0 ? diff / scale : diff;
  }
  return comparison;
}

absl::Status RunCompare(const CompareOptions& options, const TerminationSignals& signals,
                        std::ostream& out) {
  if (!options.timeline_file.empty()) {
    // Checked before any cluster runs, not after minutes of them.
    const size_t slash = options.timeline_file.rfind('/');
    const std::string parent = slash == std::string::npos
                                   ? "."
                                   : options.timeline_file.substr(0, std::max<size_t>(slash, 1));
    if (access(parent.c_str(), W_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--timeline=", options.timeline_file, ": cannot write into ", parent,
                       " (create the directory or pick another path)"));
    }
  }
  CompareReport report;
  std::vector<worker::TimelineProcess> timeline;
  std::vector<worker::TimelineProcess>* timeline_sink =
      options.timeline_file.empty() ? nullptr : &timeline;
  const bool sweep = IsSweep(options);
  absl::Status failed;  // the first mode that failed; the runs after it are not started
  for (size_t job_index = 0; job_index < options.jobs.size(); ++job_index) {
    const TrainingOptions& job = options.jobs[job_index];
    if (!failed.ok()) break;
    JobComparison comparison;
    if (sweep) {
      ASSIGN_OR_RETURN(comparison, RunScalingSweep(options, static_cast<int>(job_index), signals,
                                                   out, failed, timeline_sink));
    } else {
      ASSIGN_OR_RETURN(
          comparison,
          RunJobComparison(options, static_cast<int>(job_index), job,
                           {options.cluster.workers, options.cluster.ps_shards},
                           {SyncMode::kPs, SyncMode::kRing}, signals, out, failed, timeline_sink));
    }
    out << "\n";
    PrintComparisonTable(comparison, out);
    if (sweep) PrintScalingTable(comparison, out);
    out.flush();
    report.jobs.push_back(std::move(comparison));
  }
  if (!options.json_file.empty()) {
    RETURN_IF_ERROR(WriteCompareJsonFile(report, options.json_file));
    out << "JSON: " << options.json_file << "\n";
  }
  if (!options.report_file.empty()) {
    RETURN_IF_ERROR(WriteHtmlReportFile(report, options.report_file));
    out << "report: " << options.report_file << "\n";
  }
  if (timeline_sink != nullptr) {
    RETURN_IF_ERROR(Annotate(WriteMergedTimeline(timeline, options.timeline_file), "--timeline"));
    out << "timeline: " << options.timeline_file << " (" << timeline.size()
        << " worker processes; open in ui.perfetto.dev or chrome://tracing)\n";
  }
  return failed;
}

}  // namespace ringside::cli
