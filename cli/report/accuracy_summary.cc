#include "cli/report/accuracy_summary.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace ringside::cli {

std::vector<AccuracyPoint> MergeEvaluations(const std::vector<Evaluations>& files) {
  std::map<int64_t, AccuracyPoint> by_step;
  for (const Evaluations& file : files) {
    for (const EvaluationLine& line : file.lines) {
      AccuracyPoint point{line.step, line.seconds, line.test_accuracy, line.loss};
      if (line.sent_bytes >= 0) point.sent_bytes = line.sent_bytes;
      by_step.emplace(line.step, point);
    }
  }
  std::vector<AccuracyPoint> points;
  for (const auto& [step, point] : by_step) points.push_back(point);
  return points;
}

double MeanEvaluationSeconds(const std::vector<Evaluations>& files) {
  double sum = 0;
  int count = 0;
  for (const Evaluations& file : files) {
    for (const EvaluationLine& line : file.lines) {
      sum += line.eval_seconds;
      ++count;
    }
  }
  return count > 0 ? sum / count : 0;
}

void SummariseAccuracy(double target, ModeReport& mode) {
  mode.test_accuracy.reset();
  mode.test_accuracy_recent.reset();
  mode.recent_evaluations = 0;
  mode.seconds_to_target.reset();
  mode.steps_to_target.reset();
  mode.bytes_to_target.reset();
  const std::vector<AccuracyPoint>& points = mode.accuracy_over_time;
  if (points.empty()) return;
  mode.test_accuracy = points.back().test_accuracy;
  const size_t recent = std::min<size_t>(points.size(), kRecentEvaluations);
  double sum = 0;
  for (size_t i = points.size() - recent; i < points.size(); ++i) sum += points[i].test_accuracy;
  mode.test_accuracy_recent = sum / static_cast<double>(recent);
  mode.recent_evaluations = static_cast<int>(recent);
  for (const AccuracyPoint& point : points) {
    if (point.test_accuracy >= target) {
      mode.seconds_to_target = point.seconds;
      mode.steps_to_target = point.step;
      mode.bytes_to_target = point.sent_bytes;
      return;
    }
  }
}

void ReadAccuracyOverTime(const std::vector<std::string>& paths, double target, ModeReport& mode) {
  std::vector<Evaluations> files;
  for (const std::string& path : paths) {
    files.push_back(ReadEvaluations(path));
    if (files.back().unreadable > 0) {
      mode.events.push_back(absl::StrCat(path, " had ", files.back().unreadable,
                                         " unreadable evaluation lines; they are left out"));
    }
  }
  mode.accuracy_over_time = MergeEvaluations(files);
  mode.eval_seconds_mean = MeanEvaluationSeconds(files);
  SummariseAccuracy(target, mode);
}

}  // namespace ringside::cli
