#include "bench/train_report.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/median.h"

namespace ringside::bench {
namespace {

template <typename T>
std::optional<T> NumberOf(const nlohmann::json& object, const char* name) {
  if (!object.contains(name) || !object[name].is_number()) return std::nullopt;
  return object[name].get<T>();
}

template <typename T>
nlohmann::json NumberOrNull(const std::optional<T>& value) {
  return value.has_value() ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::string Cell(const std::optional<double>& value, const char* format, double scale) {
  return value.has_value() ? absl::StrFormat(format, *value * scale) : std::string("-");
}

// "<what> <ours> <op> <base>: median M (range L-H over K runs)" from `figure`, which gives a
// run's value of the comparison or nothing.
std::string RatioLine(
    const std::vector<TrainResult>& results, int runs, const std::string& what,
    const std::function<std::optional<double>(const TrainResult&, const TrainResult&)>& figure,
    const std::string& ours, const char* op, const std::string& base, const char* unit) {
  std::vector<double> values;
  for (int run = 1; run <= runs; ++run) {
    const TrainResult *a = nullptr, *b = nullptr;
    for (const TrainResult& r : results) {
      if (r.run != run) continue;
      if (r.implementation == ours) a = &r;
      if (r.implementation == base) b = &r;
    }
    if (a == nullptr || b == nullptr) continue;
    if (const std::optional<double> value = figure(*a, *b)) values.push_back(*value);
  }
  if (values.empty()) return "";
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return absl::StrFormat("%s %s %s %s: median %.3f%s (range %.3f to %.3f over %d runs)\n", what,
                         ours, op, base, Median(values), unit, *low, *high, values.size());
}

std::optional<double> SamplesRatio(const TrainResult& a, const TrainResult& b) {
  if (a.samples_per_second <= 0 || b.samples_per_second <= 0) return std::nullopt;
  return a.samples_per_second / b.samples_per_second;
}

std::optional<double> TargetRatio(const TrainResult& a, const TrainResult& b) {
  if (!a.seconds_to_target || !b.seconds_to_target || *b.seconds_to_target <= 0) {
    return std::nullopt;
  }
  return *a.seconds_to_target / *b.seconds_to_target;
}

std::optional<double> AccuracyDifference(const TrainResult& a, const TrainResult& b) {
  if (!a.test_accuracy || !b.test_accuracy) return std::nullopt;
  return (*a.test_accuracy - *b.test_accuracy) * 100;
}

}  // namespace

absl::StatusOr<std::vector<TrainResult>> RingsideResults(const nlohmann::json& compare, int run) {
  std::vector<TrainResult> results;
  for (const char* mode : {"ring", "ps"}) {
    if (!compare.contains("modes") || !compare["modes"].contains(mode) ||
        !compare["modes"][mode].contains("step_seconds")) {
      return absl::InternalError(
          absl::StrCat("ringside compare's JSON has no modes.", mode, ".step_seconds"));
    }
    const nlohmann::json& m = compare["modes"][mode];
    TrainResult result{absl::StrCat("ringside-", mode), run, m.value("samples_per_second", 0.0),
                       m["step_seconds"].value("p50", 0.0)};
    for (const nlohmann::json& p : m.value("processes", nlohmann::json::array())) {
      if (p.value("name", "").rfind("worker-", 0) == 0) {
        result.peak_rss_bytes =
            std::max(result.peak_rss_bytes, p.value("peak_rss_bytes", int64_t{0}));
      }
    }
    result.test_accuracy = NumberOf<double>(m, "test_accuracy");
    result.test_accuracy_recent = NumberOf<double>(m, "test_accuracy_recent_mean");
    result.seconds_to_target = NumberOf<double>(m, "seconds_to_target");
    result.steps_to_target = NumberOf<int64_t>(m, "steps_to_target");
    results.push_back(result);
  }
  return results;
}

TrainResult TorchResult(const nlohmann::json& ddp, int run) {
  TrainResult result{"pytorch-ddp-gloo", run, ddp.value("samples_per_second", 0.0),
                     ddp.value("step_seconds_p50", 0.0)};
  result.test_accuracy = NumberOf<double>(ddp, "test_accuracy");
  result.test_accuracy_recent = NumberOf<double>(ddp, "test_accuracy_recent_mean");
  result.seconds_to_target = NumberOf<double>(ddp, "seconds_to_target");
  result.steps_to_target = NumberOf<int64_t>(ddp, "steps_to_target");
  return result;
}

std::string TrainTable(const TrainTitle& t, const std::vector<TrainResult>& results, int runs) {
  std::string out = absl::StrFormat(
      "train: %s on %s, global batch %d, Adam lr %g, %d steps, %d workers, %d PS shards, %s\n",
      t.model, t.data, t.batch_size, t.lr, t.steps, t.workers, t.ps_shards,
      t.tls ? "mutual TLS" : "plaintext");
  out += absl::StrFormat("%-18s %4s %11s %10s %11s", "implementation", "run", "samples/s",
                         "step p50", "worker RSS");
  if (t.has_test_set) {
    out += absl::StrFormat(" %9s %9s %12s", "test acc", "last-5", "to target");
  }
  out += "\n";
  for (const TrainResult& r : results) {
    out += absl::StrFormat("%-18s %4d %11.1f %8.2fms %11s", r.implementation, r.run,
                           r.samples_per_second, r.step_p50 * 1e3,
                           r.peak_rss_bytes > 0
                               ? absl::StrFormat("%.1f MiB", r.peak_rss_bytes / 1048576.0)
                               : std::string("-"));
    if (t.has_test_set) {
      out += absl::StrFormat(
          " %9s %9s %12s", Cell(r.test_accuracy, "%.1f%%", 100),
          Cell(r.test_accuracy_recent, "%.1f%%", 100),
          r.seconds_to_target.has_value()
              ? absl::StrFormat("%.1fs@%d", *r.seconds_to_target, r.steps_to_target.value_or(0))
              : std::string("not reached"));
    }
    out += "\n";
  }
  if (t.has_test_set) {
    out += absl::StrFormat(
        "test acc: the final parameters' (every implementation ran %d steps); last-5: mean of "
        "the last 5 evaluations; to target: seconds from the first step to the first evaluation "
        "at or above %g%%, @step\n",
        t.steps, t.target_accuracy * 100);
  }
  for (const char* ours : {"ringside-ring", "ringside-ps"}) {
    out += RatioLine(results, runs, "samples/s", SamplesRatio, ours, "/", "pytorch-ddp-gloo", "");
    out += RatioLine(results, runs, "seconds to target", TargetRatio, ours, "/", "pytorch-ddp-gloo",
                     "");
    out += RatioLine(results, runs, "test accuracy", AccuracyDifference, ours, "-",
                     "pytorch-ddp-gloo", " pp");
  }
  out +=
      RatioLine(results, runs, "samples/s", SamplesRatio, "ringside-ps", "/", "ringside-ring", "");
  return out;
}

nlohmann::json TrainRecords(const TrainTitle& t, const std::vector<TrainResult>& results) {
  nlohmann::json records = nlohmann::json::array();
  for (const TrainResult& r : results) {
    records.push_back({{"implementation", r.implementation},
                       {"run", r.run},
                       {"model", t.model},
                       {"data", t.data},
                       {"workers", t.workers},
                       {"ps_shards", t.ps_shards},
                       {"batch_size", t.batch_size},
                       {"steps", t.steps},
                       {"lr", t.lr},
                       {"samples_per_second", r.samples_per_second},
                       {"step_seconds_p50", r.step_p50},
                       {"peak_rss_bytes", r.peak_rss_bytes},
                       {"test_accuracy", NumberOrNull(r.test_accuracy)},
                       {"test_accuracy_recent_mean", NumberOrNull(r.test_accuracy_recent)},
                       {"target_accuracy", t.has_test_set ? nlohmann::json(t.target_accuracy)
                                                          : nlohmann::json(nullptr)},
                       {"seconds_to_target", NumberOrNull(r.seconds_to_target)},
                       {"steps_to_target", NumberOrNull(r.steps_to_target)}});
  }
  return records;
}

}  // namespace ringside::bench
