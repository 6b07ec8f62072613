// CompareJson: the `ringside compare --json` document (docs/contract.md). Every figure is
// a JSON number; a figure that was not measured (parity not checked) is null, never a string.
#include "absl/strings/str_cat.h"
#include "cli/report/compare_report.h"
#include "cli/report/repeats.h"
#include "cli/report/variant_summary.h"
#include "cli/report/verdict.h"
#include "common/file_util.h"

namespace ringside::cli {
namespace {

using nlohmann::json;

json ConfigJson(const JobConfig& c) {
  json out = {{"workers", c.workers},
              {"ps_shards", c.ps_shards},
              {"model", c.model},
              {"data", c.data},
              {"optimizer", c.optimizer},
              {"device", c.device},
              {"parameters", c.parameters},
              {"bucket_bytes", c.bucket_bytes},
              {"ps_window_bytes", c.ps_window_bytes},
              {"steps", c.steps},
              {"batch_size", c.batch_size},
              {"seed", c.seed},
              {"element_bytes", c.element_bytes},
              {"wire_dtype", c.wire_dtype},
              {"test_set", c.has_test_set},
              {"eval_every", c.eval_every},
              {"target_accuracy", c.target_accuracy},
              {"repeats", c.repeats},
              {"memory_bound_bytes",
               {{"worker", c.worker_memory_bound_bytes}, {"shard", c.shard_memory_bound_bytes}}}};
  if (!c.link_rate.empty()) {  // ringside lab
    out["link_rate"] = c.link_rate;
    out["link_burst_bytes"] = c.link_burst_bytes;
    out["slow_links"] = c.slow_links;  // host -> rate: --slow_link's exceptions to link_rate
  }
  return out;
}

json LinksJson(const std::vector<LinkTraffic>& links) {
  json out = json::array();
  for (const LinkTraffic& link : links) {
    out.push_back({{"src", link.src},
                   {"dst", link.dst},
                   {"bytes_per_step", link.bytes_per_step},
                   {"expected_bytes_per_step", link.expected_bytes_per_step}});
  }
  return out;
}

json ProcessesJson(const std::vector<ProcessMemory>& processes) {
  json out = json::array();
  for (const ProcessMemory& p : processes) {
    out.push_back({{"name", p.name}, {"peak_rss_bytes", p.peak_rss_bytes}});
  }
  return out;
}

json ProcessFailuresJson(const std::vector<ProcessFailure>& failures) {
  json out = json::array();
  for (const ProcessFailure& f : failures) {
    out.push_back({{"name", f.name},
                   {"pid", f.pid},
                   {"exit", f.exit},
                   {"log", f.log},
                   {"last_lines", f.last_lines}});
  }
  return out;
}

json ModeJson(const ModeReport& m) {
  json out = {
      {"mode", std::string(SyncModeName(m.mode))},
      {"compression", m.compression},
      {"completed", m.completed},
      {"failure", m.failure},
      {"steps", m.steps},
      {"bytes_per_worker_per_step",
       {{"measured", m.bytes_per_worker_per_step},
        {"expected", m.expected_bytes_per_worker_per_step}}},
      {"busiest_node",
       {{"name", m.busiest_node},
        {"bytes_per_step", m.busiest_node_bytes_per_step},
        {"expected_bytes_per_step", m.busiest_node_expected_bytes_per_step}}},
      {"step_seconds", {{"p50", m.step_p50}, {"p95", m.step_p95}}},
      {"phase_seconds",
       {{"compute", m.phases.compute}, {"sync", m.phases.sync}, {"update", m.phases.update}}},
      {"sync_share", m.sync_share},
      {"samples_per_second", m.samples_per_second},
      {"final_loss", m.final_loss},
      {"accuracy", m.accuracy},
      {"final_world", m.final_world},
      {"links", LinksJson(m.links)},
      {"events", m.events},
      {"processes", ProcessesJson(m.processes)},
      {"process_failures", ProcessFailuresJson(m.process_failures)},
      {"sync_seconds", {{"p50", m.sync_p50}, {"min", m.sync_min}}},
      {"compute_seconds", {{"p50", m.compute_p50}}},
      {"overlap_share", m.overlap_share},
      {"wire_relative_error",
       m.wire_relative_error.has_value() ? json(*m.wire_relative_error) : json(nullptr)},
      {"wire_error_samples", m.wire_error_samples},
  };
  // ringside lab: the cost model's sync time at the link rate, and how far above it the
  // measured median is (1.0: the link is used at its full rate).
  if (m.bound_seconds_per_step > 0) {
    out["bound_seconds_per_step"] = m.bound_seconds_per_step;
    out["sync_over_bound"] = m.sync_p50 / m.bound_seconds_per_step;
    out["bottleneck"] = m.bottleneck;  // what the bound waits for, in words
    out["bottleneck_node"] = m.bottleneck_node;
  }
  // --probe: the step model's prediction beside the measurement, and measured ÷ predicted.
  if (m.predicted_step_seconds > 0) {
    out["predicted"] = {{"step_seconds", m.predicted_step_seconds},
                        {"sync_seconds", m.predicted_sync_seconds},
                        {"measured_over_predicted_step", m.step_p50 / m.predicted_step_seconds},
                        {"measured_over_predicted_sync",
                         m.predicted_sync_seconds > 0 ? json(m.sync_p50 / m.predicted_sync_seconds)
                                                      : json(nullptr)}};
  }
  return out;
}

json PhasesJson(const PhaseSeconds& p) {
  return {{"compute", p.compute}, {"sync", p.sync}, {"update", p.update}};
}

json LossJson(const std::vector<LossPoint>& points) {
  json out = json::array();
  for (const LossPoint& p : points) {
    out.push_back({{"seconds", p.seconds}, {"step", p.step}, {"loss", p.loss}});
  }
  return out;
}

// docs/contract.md's `scaling[]` (workers, samples_per_second, efficiency) and what the report
// draws beside them.
json ScalingJson(const std::vector<ScalingPoint>& points) {
  json out = json::array();
  for (const ScalingPoint& p : points) {
    out.push_back(
        {{"workers", p.workers},
         {"ps_shards", p.ps_shards},
         {"completed", p.completed},
         {"samples_per_second", p.samples_per_second},
         {"efficiency", p.efficiency},
         {"step_seconds_p50", p.step_p50},
         {"wire_relative_error",
          p.wire_relative_error.has_value() ? json(*p.wire_relative_error) : json(nullptr)},
         {"step_seconds_mean", p.step_mean},
         {"phase_seconds", PhasesJson(p.phases)},
         {"model",
          {{"step_seconds", p.model_step_seconds}, {"phase_seconds", PhasesJson(p.model)}}}});
  }
  return out;
}

template <typename T>
json NumberOrNull(const std::optional<T>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json AccuracyJson(const std::vector<AccuracyPoint>& points) {
  json out = json::array();
  for (const AccuracyPoint& p : points) {
    out.push_back({{"step", p.step},
                   {"seconds", p.seconds},
                   {"sent_bytes", NumberOrNull(p.sent_bytes)},
                   {"test_accuracy", p.test_accuracy},
                   {"loss", p.loss}});
  }
  return out;
}

// Loss and test accuracy over time, and a sweep's points: added to ModeJson's object. The
// accuracy figures are null where nothing was measured (no test set) or the target not reached.
json WithTimeAndScaling(json out, const ModeReport& m) {
  out["loss_over_time"] = LossJson(m.loss_over_time);
  out["first_step_start_seconds"] = m.first_step_start_seconds;  // on loss_over_time's clock
  out["test_accuracy"] = NumberOrNull(m.test_accuracy);
  out["test_accuracy_recent_mean"] = NumberOrNull(m.test_accuracy_recent);
  out["recent_evaluations"] = m.recent_evaluations;
  out["seconds_to_target"] = NumberOrNull(m.seconds_to_target);
  out["steps_to_target"] = NumberOrNull(m.steps_to_target);
  out["bytes_to_target"] = NumberOrNull(m.bytes_to_target);
  out["accuracy_over_time"] = AccuracyJson(m.accuracy_over_time);
  out["eval_seconds_mean"] = m.eval_seconds_mean;
  if (!m.scaling.empty()) {
    out["scaling"] = ScalingJson(m.scaling);
    out["scaling_baseline_workers"] = m.scaling_baseline_workers;
    out["scaling_model"] = {{"bytes_per_second", m.model_bytes_per_second},
                            {"calibrated_at_workers", m.model_calibrated_at}};
  }
  return out;
}

json SpreadJson(const Spread& s) {
  if (s.count == 0) return nullptr;
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"count", s.count}};
}

// --repeats: each figure's median and min-max over the mode's runs (the runs that have it).
json SpreadsJson(const ModeReport& m) {
  std::vector<double> reached, reached_bytes;
  for (const ModeReport* run : RunsOf(m)) {
    if (!run->completed) continue;
    if (run->seconds_to_target.has_value()) reached.push_back(*run->seconds_to_target);
    if (run->bytes_to_target.has_value()) {
      reached_bytes.push_back(static_cast<double>(*run->bytes_to_target));
    }
  }
  return {
      {"step_seconds_p50",
       SpreadJson(FigureSpread(m, [](const ModeReport& r) { return r.step_p50; }))},
      {"samples_per_second",
       SpreadJson(FigureSpread(m, [](const ModeReport& r) { return r.samples_per_second; }))},
      {"phase_seconds",
       {{"compute",
         SpreadJson(FigureSpread(m, [](const ModeReport& r) { return r.phases.compute; }))},
        {"sync", SpreadJson(FigureSpread(m, [](const ModeReport& r) { return r.phases.sync; }))},
        {"update",
         SpreadJson(FigureSpread(m, [](const ModeReport& r) { return r.phases.update; }))}}},
      {"seconds_to_target", SpreadJson(SpreadOf(reached))},
      {"bytes_to_target", SpreadJson(SpreadOf(reached_bytes))}};
}

// One run of a mode as `repeats[]` keeps it: ModeJson's figures and the time to target.
json RepeatJson(const ModeReport& run) {
  json out = ModeJson(run);
  out["seconds_to_target"] = NumberOrNull(run.seconds_to_target);
  out["steps_to_target"] = NumberOrNull(run.steps_to_target);
  out["bytes_to_target"] = NumberOrNull(run.bytes_to_target);
  out["test_accuracy"] = NumberOrNull(run.test_accuracy);
  out["warmup"] = {{"steps", run.warmup_steps}, {"seconds", run.warmup_seconds}};
  return out;
}

// What --repeats and the steady-state figures add to a mode's object.
json WithRepeats(json out, const ModeReport& m) {
  out["warmup"] = {{"steps", m.warmup_steps}, {"seconds", m.warmup_seconds}};
  out["synchronous"] = m.synchronous;
  out["spread"] = SpreadsJson(m);
  out["repeats"] = json::array();
  for (const ModeReport* run : RunsOf(m)) out["repeats"].push_back(RepeatJson(*run));
  return out;
}

json ModeObject(const ModeReport& m) { return WithRepeats(WithTimeAndScaling(ModeJson(m), m), m); }

json ParityJson(const JobComparison& job) {
  if (!job.parity_checked) {
    return {{"checked", false}, {"max_abs_param_diff", nullptr}, {"max_rel_param_diff", nullptr}};
  }
  return {{"checked", true},
          {"max_abs_param_diff", job.max_abs_param_diff},
          {"max_rel_param_diff", job.max_rel_param_diff}};
}

json IntervalJson(const RatioInterval& i, IntervalOver over) {
  if (!i.valid) return nullptr;
  return {{"low", i.low},
          {"high", i.high},
          {"confidence", i.confidence},
          {"resamples", i.resamples},
          {"over", over == IntervalOver::kRepeats ? "repeats" : "steps"}};
}

json PerRepeatJson(const Verdict& verdict) {
  json out = json::array();
  for (size_t i = 0; i < verdict.per_repeat.size(); ++i) {
    const RepeatVerdict& r = verdict.per_repeat[i];
    const bool decided = r.outcome != Outcome::kUndecided;
    out.push_back(
        {{"repeat", i + 1},
         {"mode", r.outcome == Outcome::kWinner ? json(std::string(SyncModeName(r.winner)))
                                                : json(nullptr)},
         {"tie", r.outcome == Outcome::kTie},
         {"ps_over_ring", decided ? json(r.interval.ratio) : json(nullptr)},
         {"interval", IntervalJson(r.interval, IntervalOver::kSteps)}});
  }
  return out;
}

json WinnerJson(const JobComparison& job) {
  const Verdict verdict = DecideWinner(job);
  json out = {
      {"mode", nullptr},
      {"ratio", nullptr},
      {"basis", nullptr},
      {"tie", false},
      {"line", verdict.line},
      {"repeats", verdict.repeats},
      {"ps_over_ring", nullptr},
      {"interval", nullptr},
      {"same_steps", verdict.same_steps.has_value() ? json(*verdict.same_steps) : json(nullptr)},
      {"deciding_term", nullptr},
      {"per_repeat", PerRepeatJson(verdict)}};
  if (verdict.outcome == Outcome::kUndecided) return out;
  out["ratio"] = verdict.ratio;
  out["basis"] = verdict.basis;
  out["tie"] = verdict.outcome == Outcome::kTie;
  out["ps_over_ring"] = verdict.interval.ratio;
  out["interval"] = IntervalJson(verdict.interval, verdict.over);
  if (verdict.outcome == Outcome::kWinner) {
    out["mode"] = std::string(SyncModeName(verdict.winner));
    out["deciding_term"] = {{"term", verdict.term}, {"clause", verdict.reason}};
  }
  return out;
}

// --ps_variants: every variant's run as `modes.ps` describes one, with its name; and which
// reached the target first, by how much.
json PsVariantsJson(const JobComparison& job) {
  json out = json::array();
  for (const ModeReport& run : job.ps_variants) {
    json variant = ModeObject(run);
    variant["variant"] = run.variant;
    out.push_back(std::move(variant));
  }
  return out;
}

// --compression_variants: every compressed run as `modes.<mode>` describes one (its `mode` and
// `compression` say which).
json CompressionVariantsJson(const JobComparison& job) {
  json out = json::array();
  for (const ModeReport& run : job.compression_variants) out.push_back(ModeObject(run));
  return out;
}

json BestVariantJson(const JobComparison& job) {
  const VariantVerdict verdict = DecideBestVariant(job);
  return {
      {"variant", verdict.best.empty() ? json(nullptr) : json(verdict.best)},
      {"seconds_to_target", NumberOrNull(verdict.seconds_to_target)},
      {"ring_over_best", NumberOrNull(verdict.over_ring)},
      {"sync_over_best", NumberOrNull(verdict.over_sync)},
      {"best_over_sync_without_straggler", NumberOrNull(verdict.best_over_sync_without_straggler)},
      {"line", verdict.line}};
}

}  // namespace

json JobJson(const JobComparison& job) {
  json out = {{"config", ConfigJson(job.config)},
              {"modes", {{"ring", ModeObject(job.ring)}, {"ps", ModeObject(job.ps)}}},
              {"parity", ParityJson(job)},
              {"winner", WinnerJson(job)}};
  if (!job.ps_variants.empty()) {
    out["modes"]["ps_variants"] = PsVariantsJson(job);
    out["best_ps_variant"] = BestVariantJson(job);
  }
  if (!job.compression_variants.empty()) {
    out["modes"]["compression_variants"] = CompressionVariantsJson(job);
  }
  if (job.ps_colocated.has_value()) {  // --colocate
    json colocated = ModeObject(*job.ps_colocated);
    colocated["colocated"] = true;
    colocated["ps_shards"] = job.config.workers;
    out["modes"]["ps_colocated"] = std::move(colocated);
  }
  return out;
}

json CompareJson(const CompareReport& report) {
  json out = json::object();
  // The contract's top-level fields describe the first job; `jobs` holds them all.
  if (!report.jobs.empty()) out = JobJson(report.jobs.front());
  out["jobs"] = json::array();
  for (const JobComparison& job : report.jobs) out["jobs"].push_back(JobJson(job));
  return out;
}

absl::Status WriteCompareJsonFile(const CompareReport& report, const std::string& path) {
  // Failure texts may quote a child's log, which need not be UTF-8: replace bad bytes rather
  // than let nlohmann throw.
  const std::string text =
      CompareJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return WriteFileAtomically(path, text + "\n");
}

}  // namespace ringside::cli
