#include "cli/compare_mode.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/lab_bound.h"
#include "cli/progress.h"
#include "cli/report/accuracy_summary.h"
#include "cli/report/model_prediction.h"
#include "cli/report/step_figures.h"
#include "common/cluster_files.h"
#include "common/compression.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/local_cluster.h"
#include "launch/prometheus_text.h"
#include "launch/temp_dir.h"

namespace ringside::cli {

using launch::ClusterProcess;
using launch::LocalCluster;
using launch::LocalClusterOptions;
namespace {

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
      process.name = absl::StrCat(SyncModeName(mode), shape.colocated ? " colocated" : "",
                                  " N=", shape.workers,
                                  mode == SyncMode::kPs ? absl::StrCat(" S=", shape.ps_shards) : "",
                                  " ", model, ": ", process.name);
      out.push_back(std::move(process));
    }
  }
  return out;
}

// Per-link bytes per step from every process's link counters of `mode`, and the busiest node
// (the most received) beside the cost model's figures: for a compressed run the links' own
// expectation (each sender counts its codec's cost-model bytes), which PredictBytesPerStep's
// uncompressed model is not.
void FillLinks(const std::vector<launch::Sample>& all, SyncMode mode, const JobConfig& config,
               int shards, bool compressed, ModeReport& report) {
  const double steps = std::max<double>(1, report.steps);
  std::map<std::pair<std::string, std::string>, LinkTraffic> links;
  std::map<std::string, double> sent, received, expected_sent, expected_received;
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
      expected_sent[src] += s.value / steps;
      expected_received[dst] += s.value / steps;
    } else if (s.name == "ringside_link_received_bytes_total") {
      received[dst] += s.value / steps;
    }
  }
  for (auto& [key, link] : links) {
    if (link.bytes_per_step > 0 || link.expected_bytes_per_step > 0) report.links.push_back(link);
  }
  report.bytes_per_worker_per_step = sent["worker-0"];
  const ModelBytes model = PredictBytesPerStep(mode, config.parameters, report.final_world, shards,
                                               config.element_bytes, config.ring_buckets);
  report.expected_bytes_per_worker_per_step = model.per_worker;
  auto busiest = std::max_element(received.begin(), received.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  if (busiest != received.end()) {
    report.busiest_node = busiest->first;
    report.busiest_node_bytes_per_step = busiest->second;
  }
  report.busiest_node_expected_bytes_per_step = model.busiest_node;
  if (compressed) {
    report.expected_bytes_per_worker_per_step = expected_sent["worker-0"];
    report.busiest_node_expected_bytes_per_step = expected_received[report.busiest_node];
  }
}

// The wire dtype's sampled error (ring/wire_error.h): the largest any worker saw in `mode`.
void FillWireError(const std::vector<launch::Sample>& all, SyncMode mode, ModeReport& report) {
  const std::string label(SyncModeName(mode));
  for (const launch::Sample& s : all) {
    if (!s.labels.count("mode") || s.labels.at("mode") != label) continue;
    if (s.name == "ringside_wire_error_samples_total") {
      report.wire_error_samples =
          std::max(report.wire_error_samples, static_cast<int64_t>(s.value));
    }
  }
  if (report.wire_error_samples == 0) return;
  for (const launch::Sample& s : all) {
    if (s.name != "ringside_wire_relative_error" || !s.labels.count("mode") ||
        s.labels.at("mode") != label) {
      continue;
    }
    report.wire_relative_error = std::max(report.wire_relative_error.value_or(0), s.value);
  }
}

// Fills the traffic figures of `report` from every running process's /metrics.
absl::Status MeasureTraffic(LocalCluster& cluster, SyncMode mode, const JobConfig& config,
                            int shards, bool compressed, ModeReport& report) {
  std::vector<launch::Sample> all;
  for (auto& process : cluster.processes()) {
    if (!process->process.running()) continue;
    ASSIGN_OR_RETURN(std::vector<launch::Sample> samples,
                     launch::FetchMetrics(process->host, process->metrics_port));
    all.insert(all.end(), samples.begin(), samples.end());
  }
  FillLinks(all, mode, config, shards, compressed, report);
  FillWireError(all, mode, report);
  return absl::OkStatus();
}

// What a process that ended without being asked to said last, for the report.
ProcessFailure FailureOf(const launch::ProcessEnd& end) {
  return ProcessFailure{end.name, end.pid, end.how, end.log, end.last_lines};
}

std::string PhaseName(const ModeRunSpec& spec) {
  return absl::StrCat(
      spec.job().model, " ", SyncModeName(spec.mode), spec.shape.colocated ? " colocated" : "",
      spec.variant.empty() ? "" : " " + spec.variant,
      spec.shape.swept ? absl::StrCat(" N=", spec.shape.workers, " S=", spec.shape.ps_shards) : "",
      spec.shape.repeats > 1
          ? absl::StrCat(" (", spec.shape.repeat + 1, "/", spec.shape.repeats, ")")
          : "");
}

// The local cluster of `spec` in `dir`. A controller or shard that dies fails the run
// (restart_servers stays off): a restart in the middle would skew the very timings and byte
// counts being compared.
LocalClusterOptions ClusterOptionsOf(const ModeRunSpec& spec, const std::string& dir) {
  const CompareOptions& options = spec.session.options;
  LocalClusterOptions cluster_options;
  cluster_options.bin_dir = options.cluster.bin_dir;
  cluster_options.dir = dir;
  cluster_options.workers = spec.shape.workers;
  cluster_options.ps_shards = spec.shape.ps_shards;
  if (spec.session.timeline != nullptr) {
    for (int i = 0; i < spec.shape.workers; ++i) {
      cluster_options.flags_of_worker[i] = {
          "--timeline_file=" + TimelinePath(dir, i),
          absl::StrCat("--timeline_capacity=", options.timeline_capacity)};
    }
  }
  if (options.ps_window_bytes > 0) {
    cluster_options.worker_flags.push_back(
        absl::StrCat("--ps_window_bytes=", options.ps_window_bytes));
  }
  cluster_options.mode = spec.mode;
  cluster_options.training = spec.job();
  cluster_options.heartbeat_timeout = options.cluster.heartbeat_timeout;
  if (options.link_rate.has_value()) {  // the lab: a step may take longer than the default
    cluster_options.collective_timeout =
        LabCollectiveTimeout({*options.link_rate, options.slow_links}, spec.shape.workers,
                             spec.config.parameters, cluster_options.collective_timeout);
  }
  cluster_options.checkpoint_dir =
      CompareCheckpointDir(options.cluster.checkpoint_dir, spec.job_index, spec.mode);
  if (spec.shape.swept && !cluster_options.checkpoint_dir.empty()) {
    absl::StrAppend(&cluster_options.checkpoint_dir, "-n", spec.shape.workers, "-s",
                    spec.shape.ps_shards);
  }
  if (!spec.variant.empty() && !cluster_options.checkpoint_dir.empty()) {
    absl::StrAppend(&cluster_options.checkpoint_dir, "-",
                    spec.variant);  // no variant resumes another
  }
  if (spec.shape.colocated && !cluster_options.checkpoint_dir.empty()) {
    cluster_options.checkpoint_dir += "-colocated";  // not the separate shards' state
  }
  if (spec.shape.repeat > 0 && !cluster_options.checkpoint_dir.empty()) {
    absl::StrAppend(&cluster_options.checkpoint_dir, "-r", spec.shape.repeat + 1);
  }
  cluster_options.checkpoint_every = options.cluster.checkpoint_every;
  cluster_options.tls = options.cluster.tls;
  cluster_options.host_of = options.host_of;
  cluster_options.colocate_shards = spec.shape.colocated;
  return cluster_options;
}

// "<phase>: started <process> (pid <pid>) ..., <transport>; reach it with: <ringside ctl ...>"
void PrintStarted(const ModeRunSpec& spec, const std::string& phase, LocalCluster& cluster) {
  std::ostream& out = spec.session.out;
  out << phase << ": started";
  for (auto& process : cluster.processes()) {
    out << " " << process->name << " (pid " << process->process.pid() << ")";
  }
  out << (spec.session.options.cluster.tls ? ", mutual TLS" : ", plaintext (--insecure)")
      << "; reach it with: " << absl::StrJoin(cluster.CtlCommand(spec.mode), " ") << "\n";
  out.flush();
}

// Waits for a running cluster's result files. Every round (at most 200 ms) it reports the
// workers lost meanwhile (the others go on without them), fails on a signal or a dead controller
// or shard, and shows the first live worker's steps and bytes on the progress line.
class ResultWait {
 public:
  ResultWait(const ModeRunSpec& spec, const std::string& phase, LocalCluster& cluster,
             ModeReport& report, std::vector<ProcessFailure>& failures)
      : spec_(spec),
        phase_(phase),
        cluster_(cluster),
        report_(report),
        failures_(failures),
        progress_(phase, spec.job().steps, isatty(STDOUT_FILENO) == 1, spec.session.out) {}

  absl::StatusOr<std::vector<TrainResultFile>> Run() {
    const TerminationSignals& signals = spec_.session.signals;
    while (true) {
      if (signals.received())
        return absl::CancelledError("stopped by a signal; every child stopped");
      ReportLosses();
      if (std::optional<launch::ProcessEnd> dead = cluster_.DeadChild()) {
        failures_.push_back(FailureOf(*dead));
        return absl::AbortedError(
            absl::StrCat("a process of the cluster died: ", dead->Describe()));
      }
      absl::StatusOr<std::vector<TrainResultFile>> done =
          cluster_.WaitForResults(absl::Milliseconds(200), [&] { return signals.received(); });
      ReportLosses();  // found inside the wait
      if (done.ok()) {
        progress_.Break();
        return done;
      }
      // INTERNAL: the controller or a shard died; the check above names it next time round.
      if (done.status().code() != absl::StatusCode::kDeadlineExceeded &&
          done.status().code() != absl::StatusCode::kInternal) {
        return done.status();
      }
      ShowProgress();
      RETURN_IF_ERROR(CheckNotStalled());
    }
  }

 private:
  void ReportLosses() {
    std::ostream& out = spec_.session.out;
    for (const launch::ProcessEnd& lost : cluster_.TakeLostWorkerReports()) {
      report_.events.push_back(absl::StrCat(lost.Summary(), "; the others went on without it"));
      failures_.push_back(FailureOf(lost));
      progress_.Break();
      out << phase_ << ": " << report_.events.back() << "\n" << lost.Tail() << "\n";
      out.flush();
    }
  }

  // From the first worker still expected to run; nothing when its /metrics does not answer.
  void ShowProgress() {
    for (ClusterProcess* w : cluster_.workers()) {
      if (w->expected_to_end) continue;
      absl::StatusOr<std::vector<launch::Sample>> samples =
          launch::FetchMetrics(w->host, w->metrics_port);
      if (!samples.ok()) return;
      const std::string label(SyncModeName(spec_.mode));
      const Seen seen{
          launch::FindSample(*samples, "ringside_steps_total", {{"mode", label}}).value_or(0),
          launch::SumSamples(*samples, "ringside_link_bytes_total", {{"mode", label}})};
      progress_.Update(seen.steps, seen.bytes);
      if (seen.steps != seen_.steps || seen.bytes != seen_.bytes) {
        seen_ = seen;
        last_change_ = absl::Now();
      }
      return;
    }
  }

  // DEADLINE_EXCEEDED once --stall_timeout has passed with no step and no byte seen (or no
  // /metrics answering): a cluster that hangs fails, naming where it stopped, instead of keeping
  // compare waiting for ever. A slow link still moves bytes, so it is never taken for a stall.
  absl::Status CheckNotStalled() const {
    const absl::Duration limit = spec_.session.options.stall_timeout;
    if (absl::Now() - last_change_ < limit) return absl::OkStatus();
    const std::string where =
        seen_.steps < 0 ? "no worker's /metrics answered"
                        : absl::StrCat("the first live worker at step ", seen_.steps, " of ",
                                       spec_.job().steps, ", ", seen_.bytes, " bytes sent");
    return absl::DeadlineExceededError(absl::StrCat("stalled: no step and no byte sent for ",
                                                    absl::FormatDuration(limit), " (", where,
                                                    "); stopped the cluster (--stall_timeout)"));
  }

  struct Seen {
    double steps = -1, bytes = -1;  // none yet
  };

  const ModeRunSpec& spec_;
  const std::string& phase_;
  LocalCluster& cluster_;
  ModeReport& report_;
  std::vector<ProcessFailure>& failures_;
  PhaseProgress progress_;
  Seen seen_;
  absl::Time last_change_ = absl::Now();
};

// The first worker still expected to run: its step trace and parameters are the run's.
const ClusterProcess* FirstLiveWorker(LocalCluster& cluster) {
  for (ClusterProcess* w : cluster.workers()) {
    if (!w->expected_to_end) return w;
  }
  return nullptr;
}

// Everything measured of a cluster whose workers reported `result`, while it still runs (its
// /metrics are read). `first`: the first surviving worker.
absl::Status Measure(const ModeRunSpec& spec, const std::string& dir, LocalCluster& cluster,
                     const TrainResultFile& result, const ClusterProcess& first,
                     absl::Time cluster_start, ModeRun& run) {
  ModeReport& report = run.report;
  report.completed = true;
  report.steps = result.steps;
  report.final_world = result.world;
  report.final_loss = result.final_loss;
  report.accuracy = result.accuracy;
  RETURN_IF_ERROR(MeasureTraffic(cluster, spec.mode, spec.config, spec.shape.ps_shards,
                                 spec.job().compression.kind != CompressionKind::kNone, report));
  // Step times, samples/s and the phases all from this one worker's trace (step_figures.h).
  FillStepFigures(ReadStepTrace(first.trace_file), first.name, spec.job().batch_size,
                  absl::ToDoubleSeconds(cluster_start - absl::UnixEpoch()), report);
  std::vector<std::string> eval_files;  // lost workers' too: one may have been rank 0 a while
  for (ClusterProcess* w : cluster.workers()) eval_files.push_back(w->eval_file);
  ReadAccuracyOverTime(eval_files, spec.session.options.target_accuracy, report);
  if (spec.session.timeline != nullptr) {
    run.timeline = ReadTimelines(dir, spec.shape.workers, spec.mode, spec.shape, spec.job().model,
                                 report.events);
  }
  ASSIGN_OR_RETURN(const std::string params, ReadFileToString(first.params_file));
  run.parameters.resize(params.size() / sizeof(float));
  std::memcpy(run.parameters.data(), params.data(), params.size());
  return absl::OkStatus();
}

// One mode's cluster in `dir`, run to its end, measured and stopped (RunMode says the rest).
absl::StatusOr<ModeRun> RunCluster(const ModeRunSpec& spec, const std::string& dir,
                                   std::vector<ProcessFailure>& failures) {
  const LocalClusterOptions cluster_options = ClusterOptionsOf(spec, dir);
  const absl::Time cluster_start = absl::Now();
  ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster, LocalCluster::Start(cluster_options));
  ModeRun run;
  run.report.mode = spec.mode;
  run.report.colocated = spec.shape.colocated;
  run.report.variant = spec.variant;
  run.report.compression = CompressionText(spec.job().compression);
  const std::string phase = PhaseName(spec);
  PrintStarted(spec, phase, *cluster);
  ASSIGN_OR_RETURN(const std::vector<TrainResultFile> results,
                   ResultWait(spec, phase, *cluster, run.report, failures).Run());
  const ClusterProcess* first = FirstLiveWorker(*cluster);
  if (first == nullptr || results.empty()) {
    return absl::UnavailableError("no worker survived to report a result");
  }
  RETURN_IF_ERROR(Measure(spec, dir, *cluster, results.front(), *first, cluster_start, run));
  cluster->Stop();
  // After Stop every child is reaped, so each peak is final (the kernel's, not a sample).
  for (auto& process : cluster->processes()) {
    const std::optional<launch::ExitStatus>& status = process->process.exit_status();
    run.report.processes.push_back({process->name, status ? status->peak_rss_bytes : 0});
  }
  return run;
}

}  // namespace

absl::StatusOr<ModeRun> RunMode(const ModeRunSpec& spec, std::vector<ProcessFailure>& failures) {
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-compare-"));
  absl::StatusOr<ModeRun> run = RunCluster(spec, dir.path(), failures);
  const bool cancelled = !run.ok() && run.status().code() == absl::StatusCode::kCancelled;
  if (!cancelled && (!run.ok() || !failures.empty())) {
    dir.Keep();
    spec.session.out << PhaseName(spec) << ": the cluster's logs are kept in " << dir.path()
                     << "\n";
    spec.session.out.flush();
  }
  return run;
}

}  // namespace ringside::cli
