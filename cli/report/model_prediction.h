// What the analytic cost model (common/cost_model.h) predicts for one step of a job, in bytes:
// the payload one worker sends, and the ingress of the busiest node. The compare table quotes it
// and the HTML report draws it for N = 2..1024. Pure; thread-safe.
//
// The busiest node is common/cost_model.h's (RingBusiestNode, PsBusiestNode).
#ifndef RINGSIDE_CLI_REPORT_MODEL_PREDICTION_H_
#define RINGSIDE_CLI_REPORT_MODEL_PREDICTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/optimizer.h"

namespace ringside::cli {

struct ModelBytes {
  double per_worker = 0;    // bytes worker-0 sends per step
  double busiest_node = 0;  // bytes per step into the busiest node
  std::string busiest_node_name;
  double largest_shard_ingress = 0;  // ps only: N·|largest range| elements, in bytes
};

// K = `parameters` elements of `element_bytes` bytes, N = `workers`, S = `ps_shards` (ps only).
// All zero when the job has no parameters or no workers. `ring_buckets`: the elements of each
// allreduce of a ring step (--bucket_bytes); empty: one of all K.
ModelBytes PredictBytesPerStep(SyncMode mode, int64_t parameters, int workers, int ps_shards,
                               int element_bytes, absl::Span<const uint64_t> ring_buckets = {});

// Issue 26's memory goal, which the compare table sets beside each peak RSS: a worker holds the
// model's parameters, its gradient and the optimiser's moments (float32 each: sgd none,
// momentum one, adam two), a shard the parameters and moments of its range (the largest
// range), each plus kMemoryAllowanceBytes for everything else -- code, libraries, data,
// buffers -- an allowance that must not grow with the model.
inline constexpr int64_t kMemoryAllowanceBytes = int64_t{64} << 20;
struct MemoryBound {
  int64_t worker_bytes = 0;
  int64_t shard_bytes = 0;  // 0 without shards
};
MemoryBound PredictMemoryBound(int64_t parameters, int ps_shards, OptimizerKind optimizer);

// Worker counts from 2 to `max_workers`, spaced evenly on a log axis (eight per doubling,
// every integer while that is finer), for drawing the model as a curve.
std::vector<int> WorkerCountsForCurve(int max_workers);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_MODEL_PREDICTION_H_
