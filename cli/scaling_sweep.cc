#include "cli/scaling_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/report/format_units.h"
#include "cli/report/model_prediction.h"
#include "common/status_macros.h"

namespace ringside::cli {
namespace {

ScalingPoint PointOf(const ModeReport& report, ClusterShape shape) {
  ScalingPoint point;
  point.workers = shape.workers;
  point.ps_shards = shape.ps_shards;
  point.completed = report.completed && report.samples_per_second > 0;
  point.samples_per_second = report.samples_per_second;
  point.step_p50 = report.step_p50;
  point.wire_relative_error = report.wire_relative_error;
  point.phases = report.phases;
  point.step_mean = report.phases.compute + report.phases.sync + report.phases.update;
  return point;
}

const ScalingPoint* Baseline(const std::vector<ScalingPoint>& points, int shards) {
  const ScalingPoint* best = nullptr;
  for (const ScalingPoint& p : points) {
    if (p.completed && p.ps_shards == shards && (best == nullptr || p.workers < best->workers)) {
      best = &p;
    }
  }
  return best;
}

double BusiestBytes(SyncMode mode, const JobConfig& c, int workers, int shards) {
  return PredictBytesPerStep(mode, c.parameters, workers, shards, c.element_bytes).busiest_node;
}

// How far off the model a measured step may be and still be said to follow it.
constexpr double kModelTolerance = 0.25;

// A row of the sweep's table as the text names it: "N = 4", in ps mode "N = 4, S = 2".
std::string SizeName(SyncMode mode, const ScalingPoint& p) {
  return mode == SyncMode::kPs ? absl::StrCat("N = ", p.workers, ", S = ", p.ps_shards)
                               : absl::StrCat("N = ", p.workers);
}

bool HasModel(const ScalingPoint& p) { return p.completed && p.model_step_seconds > 0; }

// The measured step mean over the model's step time, as the table's two columns give it.
double ModelRatio(const ScalingPoint& p) { return p.step_mean / p.model_step_seconds; }

bool OffTheModel(const ScalingPoint& p) {
  return HasModel(p) &&
         std::abs(p.step_mean - p.model_step_seconds) > kModelTolerance * p.model_step_seconds;
}

// One line on how the measured step compares with the model over every row of the table (every
// shard count), naming each size more than kModelTolerance off with its ratio, or the worst.
std::string ModelAgreementLine(const ModeReport& mode) {
  const std::string name(SyncModeName(mode.mode));
  std::vector<std::string> off;
  const ScalingPoint* worst = nullptr;
  int compared = 0, failed = 0;
  for (const ScalingPoint& p : mode.scaling) {
    if (!p.completed) ++failed;
    if (!HasModel(p)) continue;
    ++compared;
    if (worst == nullptr ||
        std::abs(std::log(ModelRatio(p))) > std::abs(std::log(ModelRatio(*worst)))) {
      worst = &p;
    }
    if (OffTheModel(p)) {
      off.push_back(absl::StrFormat("%s (%.2f\u00d7)", SizeName(mode.mode, p), ModelRatio(p)));
    }
  }
  if (worst == nullptr) return name + ": no size has a model step to compare with";
  const std::string sizes = failed > 0 ? "completed size" : "size";
  if (off.empty()) {
    return absl::StrFormat(
        "%s: the measured step stays within %.0f%% of the model at every %s (furthest: %.2f\u00d7 "
        "the model at %s)",
        name, kModelTolerance * 100, sizes, ModelRatio(*worst), SizeName(mode.mode, *worst));
  }
  return absl::StrFormat(
      "%s: the measured step is more than %.0f%% off the model at %d of %d %ss, measured \u00f7 "
      "model: %s",
      name, kModelTolerance * 100, off.size(), compared, sizes, absl::StrJoin(off, "; "));
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCountList(absl::string_view flag, absl::string_view text,
                                                int max) {
  std::set<int> counts;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(item, &n) || n < 1 || n > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "=", text, ": '", item, "' is not a count from 1 to ", max,
                       "; give one count or a comma-separated list such as 1,2,4,8"));
    }
    if (!counts.insert(n).second) {
      return absl::InvalidArgumentError(absl::StrCat(flag, "=", text, ": ", n, " is listed twice"));
    }
  }
  return std::vector<int>(counts.begin(), counts.end());
}

bool IsSweep(const CompareOptions& options) {
  return options.worker_counts.size() > 1 || options.shard_counts.size() > 1;
}

absl::StatusOr<JobComparison> RunScalingSweep(const CompareSession& session, int job_index) {
  const CompareOptions& options = session.options;
  const std::vector<int> workers = options.worker_counts.empty()
                                       ? std::vector<int>{options.cluster.workers}
                                       : options.worker_counts;
  const std::vector<int> shards = options.shard_counts.empty()
                                      ? std::vector<int>{options.cluster.ps_shards}
                                      : options.shard_counts;
  std::vector<ScalingPoint> ring_points, ps_points;
  // Of every size, not only the largest's, which the report describes.
  std::vector<ProcessFailure> ring_failures, ps_failures;
  JobComparison largest;
  bool have_largest = false;
  for (int n : workers) {
    for (size_t s = 0; s < shards.size() && session.failed.ok(); ++s) {
      const ClusterShape shape{n, shards[s], /*swept=*/true};
      // The ring does not use shards: it runs once per N, beside the first shard count.
      const std::vector<SyncMode> modes =
          s == 0 ? std::vector<SyncMode>{SyncMode::kPs, SyncMode::kRing}
                 : std::vector<SyncMode>{SyncMode::kPs};
      ASSIGN_OR_RETURN(JobComparison run, RunJobComparison(session, job_index, shape, modes));
      ps_points.push_back(PointOf(run.ps, shape));
      ps_failures.insert(ps_failures.end(), run.ps.process_failures.begin(),
                         run.ps.process_failures.end());
      if (s == 0) {
        ring_points.push_back(PointOf(run.ring, shape));
        ring_failures.insert(ring_failures.end(), run.ring.process_failures.begin(),
                             run.ring.process_failures.end());
        largest = std::move(run);  // the largest N run so far, at the first shard count
        have_largest = true;
      }
    }
  }
  if (!have_largest) return absl::InternalError("the sweep ran no cluster");
  largest.ring.scaling = std::move(ring_points);
  largest.ps.scaling = std::move(ps_points);
  largest.ring.process_failures = std::move(ring_failures);
  largest.ps.process_failures = std::move(ps_failures);
  FillScalingModel(largest.ring, largest.config, 0);
  FillScalingModel(largest.ps, largest.config, 0);
  return largest;
}

void FillScalingModel(ModeReport& mode, const JobConfig& config, double link_bytes_per_second) {
  std::vector<ScalingPoint>& points = mode.scaling;
  if (points.empty()) return;
  const int first_shards = points.front().ps_shards;
  mode.model_bytes_per_second = 0;
  mode.model_calibrated_at = 0;
  if (link_bytes_per_second > 0) {
    mode.model_bytes_per_second = link_bytes_per_second;
  } else {
    std::vector<const ScalingPoint*> sorted;
    for (const ScalingPoint& p : points) {
      if (p.completed && p.ps_shards == first_shards) sorted.push_back(&p);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](const ScalingPoint* a, const ScalingPoint* b) { return a->workers < b->workers; });
    for (const ScalingPoint* p : sorted) {
      const double bytes = BusiestBytes(mode.mode, config, p->workers, p->ps_shards);
      if (bytes > 0 && p->phases.sync > 0) {
        mode.model_bytes_per_second = bytes / p->phases.sync;
        mode.model_calibrated_at = p->workers;
        break;
      }
    }
  }
  const ScalingPoint* first_baseline = Baseline(points, first_shards);
  mode.scaling_baseline_workers = first_baseline != nullptr ? first_baseline->workers : 0;
  // Baselines are looked up before any point is written, so copy them out first.
  std::vector<std::pair<int, ScalingPoint>> baselines;
  for (const ScalingPoint& p : points) {
    if (const ScalingPoint* b = Baseline(points, p.ps_shards))
      baselines.push_back({p.ps_shards, *b});
  }
  for (ScalingPoint& p : points) {
    auto b = std::find_if(baselines.begin(), baselines.end(),
                          [&](const auto& entry) { return entry.first == p.ps_shards; });
    if (b == baselines.end()) continue;
    const ScalingPoint& base = b->second;
    const double ratio = static_cast<double>(base.workers) / p.workers;
    p.efficiency = p.completed && base.samples_per_second > 0
                       ? p.samples_per_second / (base.samples_per_second / ratio)
                       : 0;
    p.model.compute = base.phases.compute * ratio;
    p.model.update = base.phases.update;
    p.model.sync =
        mode.model_bytes_per_second > 0
            ? BusiestBytes(mode.mode, config, p.workers, p.ps_shards) / mode.model_bytes_per_second
            : 0;
    p.model_step_seconds = p.model.compute + p.model.sync + p.model.update;
  }
}

void PrintScalingTable(const JobComparison& job, std::ostream& out) {
  out << "Scaling (" << job.config.model << ", global batch " << job.config.batch_size
      << " whatever N; efficiency = samples/s(N) / (N/N0 x samples/s(N0))):\n";
  // A 16-bit wire adds the sampled gradient error at each N: it grows with N in a ring (a
  // rounding per hop) and not in a parameter server (two roundings whatever N).
  bool wire_error = false;
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    for (const ScalingPoint& p : mode->scaling) wire_error |= p.wire_relative_error.has_value();
  }
  out << "  mode  N   S   samples/s  efficiency  step mean  model step  compute    sync"
      << (wire_error ? "             gradient error" : "") << "\n";
  for (const ModeReport* mode : {&job.ring, &job.ps}) {
    for (const ScalingPoint& p : mode->scaling) {
      std::string sync = HumanSeconds(p.phases.sync);
      if (wire_error) {
        sync = absl::StrFormat("%-17s%s", sync,
                               p.wire_relative_error.has_value()
                                   ? absl::StrFormat("%.2e", *p.wire_relative_error)
                                   : "-");
      }
      char line[200];
      std::snprintf(
          line, sizeof(line), "  %-4s  %-2d  %-2d  %-9s  %-10s  %-9s  %-10s  %-9s  %s\n",
          std::string(SyncModeName(mode->mode)).c_str(), p.workers, p.ps_shards,
          p.completed ? WithThousands(std::llround(p.samples_per_second)).c_str() : "failed",
          p.completed ? Percent(p.efficiency).c_str() : "-", HumanSeconds(p.step_mean).c_str(),
          HumanSeconds(p.model_step_seconds).c_str(), HumanSeconds(p.phases.compute).c_str(),
          sync.c_str());
      out << line;
    }
    for (const std::string& line :
         ScalingExplanation(*mode, static_cast<int>(std::thread::hardware_concurrency())))
      out << "  " << line << "\n";
  }
}

std::vector<std::string> ScalingExplanation(const ModeReport& mode, int cores) {
  std::vector<std::string> lines;
  if (mode.scaling.empty()) return lines;
  const std::string name(SyncModeName(mode.mode));
  const int shards = mode.scaling.front().ps_shards;
  const ScalingPoint* largest = nullptr;
  const ScalingPoint* parted = nullptr;  // the first row of the table off the model
  for (const ScalingPoint& p : mode.scaling) {
    if (parted == nullptr && OffTheModel(p)) parted = &p;
    if (!p.completed || p.ps_shards != shards) continue;
    if (largest == nullptr || p.workers > largest->workers) largest = &p;
  }
  if (largest == nullptr) {
    lines.push_back(name + ": no size of the sweep completed");
    return lines;
  }
  lines.push_back(absl::StrCat(
      name, ": efficiency ", Percent(largest->efficiency), " at ", SizeName(mode.mode, *largest),
      " against N0 = ", mode.scaling_baseline_workers,
      mode.scaling_baseline_workers == 1 ? "" : " (1 was not swept: N0 is the baseline)",
      "; the model's sync divides the busiest node's bytes by ",
      mode.model_bytes_per_second > 0 ? HumanBytes(mode.model_bytes_per_second) + "/s" : "nothing",
      mode.model_calibrated_at > 0
          ? absl::StrCat(" (calibrated at N = ", mode.model_calibrated_at, ")")
          : (mode.model_bytes_per_second > 0 ? " (the link rate)" : " (no size had traffic)")));
  lines.push_back(ModelAgreementLine(mode));
  if (parted == nullptr) return lines;
  const double compute_ratio =
      parted->model.compute > 0 ? parted->phases.compute / parted->model.compute : 0;
  const double sync_ratio = parted->model.sync > 0 ? parted->phases.sync / parted->model.sync : 0;
  std::string why = absl::StrCat(
      name, ": measurement and model part first at ", SizeName(mode.mode, *parted), ": step ",
      HumanSeconds(parted->step_mean), " measured (mean) against ",
      HumanSeconds(parted->model_step_seconds), " modelled; compute ",
      HumanSeconds(parted->phases.compute), " (model ", HumanSeconds(parted->model.compute), ", ",
      ShortNumber(compute_ratio), "x), sync ", HumanSeconds(parted->phases.sync), " (model ",
      HumanSeconds(parted->model.sync), ", ", ShortNumber(sync_ratio), "x). ");
  if (compute_ratio > 1.3) {
    absl::StrAppend(
        &why, "Compute does not shrink as 1/N: ", parted->workers, " workers, ", parted->ps_shards,
        " shards and the controller share ",
        cores > 0 ? absl::StrCat(cores, " cores") : std::string("this machine's cores"),
        ", so a smaller batch per worker buys less time than the model assumes (CPU contention, "
        "not the network)");
    if (sync_ratio > 1.3)
      absl::StrAppend(&why, "; the sync's copies and reductions share them too");
    why += ".";
  } else if (sync_ratio > 1.3) {
    absl::StrAppend(&why,
                    "Sync grows faster than the busiest node's bytes: more streams and more "
                    "copies per byte at this N than at the calibration size.");
  } else {
    why += "Neither phase alone is off by 30%; the difference is spread over both.";
  }
  lines.push_back(why);
  return lines;
}

}  // namespace ringside::cli
