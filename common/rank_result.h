// What one rank of an allreduce benchmark reports, and its JSON file format. The file is the
// interface between the benchmark driver and rank processes (Gloo ranks started by this binary,
// Ringside's `ringside-worker --job=allreduce`), so both sides agree on:
//   {"rank":R,"world":N,"elements":K,"iters":I,"seconds_per_op":S,"seconds_total":T,
//    "check_ok":true,"max_abs_error":E}
// Extra fields are allowed and ignored by the reader.
//
// Also the deterministic fill pattern and its check: rank r fills element i with small integers
// so that every sum over ranks is exact in float32.
//
// Pure functions apart from file I/O; thread-safe. Errors: NOT_FOUND / INTERNAL for I/O,
// INVALID_ARGUMENT for a malformed file (message names the file and the field).
#ifndef RINGSIDE_COMMON_RANK_RESULT_H_
#define RINGSIDE_COMMON_RANK_RESULT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/median.h"
#include "nlohmann/json.hpp"

namespace ringside {

struct RankResult {
  int rank = 0;
  int world = 0;
  int64_t elements = 0;
  int iters = 0;
  double seconds_per_op = 0;  // median over the timed iterations
  double seconds_total = 0;   // sum over the timed iterations
  bool check_ok = false;
  double max_abs_error = 0;
};

nlohmann::json RankResultJson(const RankResult& result);
// Writes `result` to `path` atomically (temporary file in the same directory, then rename).
absl::Status WriteRankResult(const std::string& path, const RankResult& result);
absl::StatusOr<RankResult> ReadRankResult(const std::string& path);

// Value rank `rank` puts at index `i`: (rank + 1) * (1 + i % 8). A power-of-two period keeps
// the fill and check loops vectorisable; they run on the cores the transfers use.
inline float FillValue(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (1 + (i & 7)));
}
// The sum of FillValue over ranks 0..world-1.
inline float ExpectedSum(int world, int64_t i) {
  return static_cast<float>(world * (world + 1) / 2 * (1 + (i & 7)));
}
void FillForRank(int rank, absl::Span<float> data);
// Largest |data[i] - ExpectedSum(world, i)|; 0 means the allreduce was exact.
double MaxAbsErrorOfSum(int world, absl::Span<const float> data);
// Largest |data[i] - scale * ExpectedSum(world, i)|, for buffers that accumulate several sums
// (a benchmark shard's parameters after SGD with lr 1 hold -steps times the sum).
double MaxAbsErrorOfScaledSum(int world, float scale, absl::Span<const float> data);

// The measurement loop every allreduce rank runs: `warmup + iters` times, refill `data` with
// FillForRank, time one call of `allreduce` (an in-place sum over `world` ranks of `data`), check
// the values. Only the call is timed; filling and checking are not. Exceptions from `allreduce`
// propagate. Requires iters >= 1.
// `stop`, when given, is asked before every iteration: true ends the loop early (the caller's
// allreduce failed or it was told to stop), so a failed run does not go on filling and checking.
RankResult RunTimedIterations(int rank, int world, int warmup, int iters, absl::Span<float> data,
                              const std::function<void()>& allreduce,
                              const std::function<bool()>& stop = nullptr);
// The same loop for ranks whose values are checked elsewhere than in `data` (a PS rank checks
// the parameters it pulled): iteration `it` refills `data`, times `step(it)` and then asks
// `max_error(it)` (untimed) for its check's largest error.
RankResult RunTimedSteps(int rank, int world, int warmup, int iters, absl::Span<float> data,
                         const std::function<void(int it)>& step,
                         const std::function<double(int it)>& max_error,
                         const std::function<bool()>& stop = nullptr);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_RANK_RESULT_H_
