#include "daemons/benchmark_jobs.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/rank_result.h"
#include "common/status_macros.h"
#include "ps/ps_sync.h"

namespace ringside::worker {
namespace {

// Logs a benchmark job's outcome and writes its result file (the RankResult fields, the metrics
// port and a checksum of the final buffer); a failed value check is an error.
absl::Status Report(const WorkerOptions& options, const RunningWorker& worker,
                    const RankResult& result, const std::string& what,
                    absl::Span<const float> final_values, std::ostream& log) {
  log << WorkerName(options.rank) << ": " << options.iters << " " << what << ", "
      << result.seconds_per_op * 1e3 << " ms each (median), "
      << (result.check_ok ? "values checked" : "WRONG VALUES") << "\n";
  nlohmann::json json = RankResultJson(result);
  json["metrics_port"] = worker.metrics_server->port();
  json["checksum"] = Fnv1aHex(final_values);
  RETURN_IF_ERROR(WriteResult(options, json));
  if (!result.check_ok) {
    return absl::InternalError(
        absl::StrCat("values differ from the expected by ", result.max_abs_error));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunAllreduceJob(const WorkerOptions& options, RunningWorker& worker,
                             const TerminationSignals& signals, std::ostream& log) {
  const int world = WorldOf(options);
  std::vector<float> data(static_cast<size_t>(options.elements));
  const ring::AllreduceOptions allreduce = AllreduceOptionsOf(options);
  uint64_t collective = 0;
  absl::Status failure;
  const RankResult result = RunTimedIterations(
      options.rank, world, options.warmup, options.iters, absl::MakeSpan(data),
      [&] { failure = worker.member->Allreduce(++collective, absl::MakeSpan(data), allreduce); },
      [&] { return !failure.ok() || signals.received(); });
  if (signals.received()) return absl::CancelledError("stopped by a signal before the job ended");
  RETURN_IF_ERROR(failure);
  return Report(options, worker, result,
                absl::StrCat("allreduces of ", options.elements, " floats"), data, log);
}

absl::Status RunPushPullJob(const WorkerOptions& options, RunningWorker& worker,
                            const TerminationSignals& signals, std::ostream& log) {
  const int world = WorldOf(options);
  PsSyncOptions ps;
  ps.rank = options.rank;
  ps.shards = options.ps;
  ps.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  ps.timeout = options.timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<PsSync> sync,
                   PsSync::Create(ps, static_cast<uint64_t>(options.elements), &worker.metrics));
  std::vector<float> gradient(static_cast<size_t>(options.elements));
  std::vector<float> params(gradient.size());
  FillForRank(options.rank, absl::MakeSpan(gradient));
  std::vector<double> seconds;
  RankResult result;
  for (int it = 0; it < options.warmup + options.iters && !signals.received(); ++it) {
    const absl::Time start = absl::Now();
    RETURN_IF_ERROR(sync->Step(it, absl::MakeSpan(gradient), absl::MakeSpan(params)).status());
    if (it >= options.warmup) seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    // Benchmark shards start at zero and apply SGD with lr 1: after step `it` every parameter is
    // exactly -(it + 1) times the sum of the pushed fills (small integers, exact in float32).
    result.max_abs_error = std::max(
        result.max_abs_error, MaxAbsErrorOfScaledSum(world, -static_cast<float>(it + 1), params));
  }
  if (signals.received()) return absl::CancelledError("stopped by a signal before the job ended");
  result.rank = options.rank;
  result.world = world;
  result.elements = options.elements;
  result.iters = options.iters;
  result.seconds_per_op = Median(seconds);
  for (double s : seconds) result.seconds_total += s;
  result.check_ok = result.max_abs_error == 0;
  return Report(options, worker, result,
                absl::StrCat("push-pull steps of ", options.elements, " floats over ",
                             options.ps.size(), " shards"),
                params, log);
}

}  // namespace ringside::worker
