#include "common/rank_result.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "nlohmann/json.hpp"

namespace ringside {

nlohmann::json RankResultJson(const RankResult& result) {
  return {
      {"rank", result.rank},
      {"world", result.world},
      {"elements", result.elements},
      {"iters", result.iters},
      {"seconds_per_op", result.seconds_per_op},
      {"seconds_total", result.seconds_total},
      {"check_ok", result.check_ok},
      {"max_abs_error", result.max_abs_error},
  };
}

absl::Status WriteRankResult(const std::string& path, const RankResult& result) {
  return WriteFileAtomically(path, RankResultJson(result).dump() + "\n");
}

absl::StatusOr<RankResult> ReadRankResult(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("result file was not written: ", text.status().message()));
  }
  RankResult result;
  JsonFields fields(*text, absl::StrCat("result file ", path));
  fields.Read("rank", result.rank);
  fields.Read("world", result.world);
  fields.Read("elements", result.elements);
  fields.Read("iters", result.iters);
  fields.Read("seconds_per_op", result.seconds_per_op);
  fields.Read("check_ok", result.check_ok);
  fields.Read("seconds_total", result.seconds_total, /*required=*/false);
  fields.Read("max_abs_error", result.max_abs_error, /*required=*/false);
  if (!fields.status().ok()) return fields.status();
  return result;
}

// Both loops run between timed iterations on the cores the peers' transfers use, so they work in
// blocks of the pattern's period (8) that the compiler turns into single vector operations.
void FillForRank(int rank, absl::Span<float> data) {
  float pattern[8];
  for (int k = 0; k < 8; ++k) pattern[k] = FillValue(rank, k);
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    for (int k = 0; k < 8; ++k) data[i + k] = pattern[k];
  }
  for (; i < data.size(); ++i) data[i] = pattern[i & 7];
}

double MaxAbsErrorOfSum(int world, absl::Span<const float> data) {
  return MaxAbsErrorOfScaledSum(world, 1.0f, data);
}

double MaxAbsErrorOfScaledSum(int world, float scale, absl::Span<const float> data) {
  float expected[8];
  for (int k = 0; k < 8; ++k) expected[k] = scale * ExpectedSum(world, k);
  // Sums of small integers are exact in float32, so the common case is an exact match. A NaN
  // fails `error <= max` and is counted separately.
  float max_error[8] = {};
  int nan_count[8] = {};
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    for (int k = 0; k < 8; ++k) {
      const float error = std::fabs(data[i + k] - expected[k]);
      max_error[k] = std::max(max_error[k], error);
      nan_count[k] += error != error;
    }
  }
  float result = 0;
  int nans = 0;
  for (int k = 0; k < 8; ++k) {
    result = std::max(result, max_error[k]);
    nans += nan_count[k];
  }
  for (; i < data.size(); ++i) {
    const float error = std::fabs(data[i] - expected[i & 7]);
    result = std::max(result, error);
    nans += error != error;
  }
  return nans > 0 ? INFINITY : static_cast<double>(result);
}

RankResult RunTimedIterations(int rank, int world, int warmup, int iters, absl::Span<float> data,
                              const std::function<void()>& allreduce,
                              const std::function<bool()>& stop) {
  return RunTimedSteps(
      rank, world, warmup, iters, data, [&allreduce](int) { allreduce(); },
      [world, data](int) { return MaxAbsErrorOfSum(world, data); }, stop);
}

RankResult RunTimedSteps(int rank, int world, int warmup, int iters, absl::Span<float> data,
                         const std::function<void(int it)>& step,
                         const std::function<double(int it)>& max_error,
                         const std::function<bool()>& stop) {
  std::vector<double> seconds;
  seconds.reserve(iters);
  double worst = 0;
  for (int it = 0; it < warmup + iters && !(stop && stop()); ++it) {
    FillForRank(rank, data);
    const auto start = std::chrono::steady_clock::now();
    step(it);
    const auto end = std::chrono::steady_clock::now();
    worst = std::max(worst, max_error(it));
    if (it >= warmup) seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  RankResult result;
  result.rank = rank;
  result.world = world;
  result.elements = static_cast<int64_t>(data.size());
  result.iters = iters;
  result.seconds_per_op = Median(seconds);
  for (double s : seconds) result.seconds_total += s;
  result.max_abs_error = worst;
  result.check_ok = worst == 0;
  return result;
}

}  // namespace ringside
