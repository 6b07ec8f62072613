// `ringside compare`: one local cluster per (job, mode), measured from the processes' own
// /metrics, result files and step traces.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/compare_report.h"
#include "cli/model_prediction.h"
#include "cli/progress.h"
#include "cli/report_html.h"
#include "common/cost_model.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/local_cluster.h"
#include "launch/prometheus_text.h"
#include "launch/temp_dir.h"
#include "model/model_spec.h"

namespace ringside::cli {

using launch::ClusterProcess;
using launch::LocalCluster;
using launch::LocalClusterOptions;
namespace {

struct ModeRun {
  ModeReport report;
  std::vector<float> parameters;
};

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5))];
}

// Fills the traffic figures of `report` from every process's /metrics.
absl::Status MeasureTraffic(LocalCluster& cluster, SyncMode mode, const JobConfig& config,
                            ModeReport& report) {
  std::vector<Sample> all;
  for (auto& process : cluster.processes()) {
    if (!process->process.running()) continue;
    ASSIGN_OR_RETURN(std::vector<Sample> samples,
                     FetchMetrics(process->host, process->metrics_port));
    all.insert(all.end(), samples.begin(), samples.end());
  }
  const double steps = std::max<double>(1, report.steps);
  std::map<std::pair<std::string, std::string>, LinkTraffic> links;
  std::map<std::string, double> sent, received;
  for (const Sample& s : all) {
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
    return SumSamples(all, name, {{"phase", phase}, {"mode", label}});
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

absl::StatusOr<ModeRun> RunMode(const CompareOptions& options, int job_index,
                                const worker::TrainingOptions& job, const JobConfig& config,
                                SyncMode mode, const TerminationSignals& signals,
                                std::ostream& out) {
  ASSIGN_OR_RETURN(TempDir dir, TempDir::Create("ringside-compare-"));
  LocalClusterOptions cluster_options;
  cluster_options.bin_dir = options.cluster.bin_dir;
  cluster_options.dir = dir.path();
  cluster_options.workers = options.cluster.workers;
  cluster_options.ps_shards = options.cluster.ps_shards;
  cluster_options.mode = mode;
  cluster_options.training = job;
  cluster_options.heartbeat_timeout = options.cluster.heartbeat_timeout;
  // A controller or shard that dies fails the run (restart_servers stays off): a restart in the
  // middle would skew the very timings and byte counts being compared.
  cluster_options.checkpoint_dir =
      CompareCheckpointDir(options.cluster.checkpoint_dir, job_index, mode);
  cluster_options.checkpoint_every = options.cluster.checkpoint_every;
  cluster_options.tls = options.cluster.tls;
  cluster_options.host_of = options.host_of;
  ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster, LocalCluster::Start(cluster_options));
  ModeRun run;
  run.report.mode = mode;
  const std::string phase = absl::StrCat(job.model, " ", SyncModeName(mode));
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
    for (const std::string& lost : cluster->TakeLostWorkerReports()) {
      run.report.events.push_back(absl::StrCat(lost, "; the others went on without it"));
      progress.Break();
      out << phase << ": " << run.report.events.back() << "\n";
    }
  };
  while (true) {
    if (signals.received()) return absl::CancelledError("stopped by a signal; every child stopped");
    report_losses();
    if (std::optional<std::string> dead = cluster->DeadChild()) {
      return absl::AbortedError(absl::StrCat("a process of the cluster died: ", *dead));
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
      absl::StatusOr<std::vector<Sample>> samples = FetchMetrics(w->host, w->metrics_port);
      if (!samples.ok()) break;
      const std::string label(SyncModeName(mode));
      progress.Update(FindSample(*samples, "ringside_steps_total", {{"mode", label}}).value_or(0),
                      SumSamples(*samples, "ringside_link_bytes_total", {{"mode", label}}));
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
    const std::optional<ExitStatus>& status = process->process.exit_status();
    run.report.processes.push_back({process->name, status ? status->peak_rss_bytes : 0});
  }
  return run;
}

}  // namespace

std::string CompareCheckpointDir(const std::string& checkpoint_dir, int job, SyncMode mode) {
  if (checkpoint_dir.empty()) return "";
  return absl::StrCat(checkpoint_dir, "/job-", job + 1, "-", SyncModeName(mode));
}

absl::Status RunCompare(const CompareOptions& options, const TerminationSignals& signals,
                        std::ostream& out) {
  CompareReport report;
  absl::Status failed;  // the first mode that failed; the runs after it are not started
  for (size_t job_index = 0; job_index < options.jobs.size(); ++job_index) {
    const worker::TrainingOptions& job = options.jobs[job_index];
    if (!failed.ok()) break;
    ASSIGN_OR_RETURN(const worker::ModelSpec spec,
                     worker::ModelSpec::Parse(job.model, job.activation));
    JobComparison comparison;
    JobConfig& config = comparison.config;
    config.workers = options.cluster.workers;
    config.ps_shards = options.cluster.ps_shards;
    config.model = job.model;
    config.data = job.data;
    config.optimizer = std::string(OptimizerName(job.optimizer.kind));
    config.device = job.device;
    config.parameters = static_cast<int64_t>(spec.parameter_count());
    config.steps = job.steps;
    config.batch_size = job.batch_size;
    config.seed = job.seed;
    if (options.link_rate.has_value()) {
      config.link_rate = options.link_rate->text;
      config.link_burst_bytes = options.link_burst_bytes;
    }
    std::vector<float> ring_params, ps_params;
    for (SyncMode mode : {SyncMode::kPs, SyncMode::kRing}) {
      ModeReport& report_of_mode = mode == SyncMode::kRing ? comparison.ring : comparison.ps;
      report_of_mode.mode = mode;
      if (!failed.ok()) {
        report_of_mode.failure = "not run: an earlier run failed";
        continue;
      }
      absl::StatusOr<ModeRun> run =
          RunMode(options, static_cast<int>(job_index), job, config, mode, signals, out);
      if (!run.ok()) {
        if (run.status().code() == absl::StatusCode::kCancelled) return run.status();
        failed =
            Annotate(run.status(), absl::StrCat(job.model, " in ", SyncModeName(mode), " mode"));
        report_of_mode.failure = std::string(failed.message());
        out << "\n"
            << job.model << " " << SyncModeName(mode) << ": failed: " << failed.message() << "\n";
        continue;
      }
      report_of_mode = run->report;
      if (options.link_rate.has_value()) {  // ringside lab: the links' bound on the sync
        report_of_mode.bound_seconds_per_step = SyncBoundSeconds(
            mode, static_cast<uint64_t>(config.parameters), report_of_mode.final_world,
            config.ps_shards, config.element_bytes, options.link_rate->bytes_per_second());
      }
      (mode == SyncMode::kRing ? ring_params : ps_params) = std::move(run->parameters);
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
    out << "\n";
    PrintComparisonTable(comparison, out);
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
  return failed;
}

}  // namespace ringside::cli
