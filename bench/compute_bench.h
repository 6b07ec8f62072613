// `ringside-bench compute`: samples per second of one gradient computation (forward + backward,
// including the host<->device copies a worker pays each step) for each model on each device.
// Uses the worker compute library only; no network. Not a test: numbers depend on the machine.
//
// Thread-compatible; the function owns everything it creates. Errors: INVALID_ARGUMENT for bad
// options (model strings, devices, sizes); a device that is absent here is reported in the
// output as skipped with the reason, not as an error.
#ifndef RINGSIDE_BENCH_COMPUTE_BENCH_H_
#define RINGSIDE_BENCH_COMPUTE_BENCH_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ringside::bench {

struct ComputeBenchOptions {
  // Spark-style layer lists, each measured in turn.
  std::vector<std::string> models = {"4,16,3", "784,1024,1024,10"};
  std::string activation = "relu";
  // Devices as in --device; "cuda" entries are skipped (with the reason) when none is present.
  std::vector<std::string> devices = {"cpu", "cuda"};
  int64_t batch_size = 128;  // rows per gradient computation
  double min_seconds = 1.0;  // measure each (model, device) for at least this long
  int64_t warmup_steps = 3;  // untimed steps first (allocation, cuBLAS heuristics)
  int64_t max_steps = 1'000'000;
  uint64_t seed = 1;
};

struct ComputeBenchRecord {
  std::string model;
  std::string device;  // the computer's device ("cpu", "cuda:0") or the requested one if skipped
  uint64_t parameters = 0;
  int64_t batch_size = 0;
  int64_t steps = 0;
  double seconds = 0.0;
  double samples_per_second = 0.0;
  double final_loss = 0.0;
  std::string skipped;  // non-empty: why this device was not measured
};

absl::Status ValidateComputeBenchOptions(const ComputeBenchOptions& options);

// One record per (model, device), models outer.
absl::StatusOr<std::vector<ComputeBenchRecord>> MeasureCompute(const ComputeBenchOptions& options);

// MeasureCompute, printed as a table to `out`.
absl::Status RunComputeBench(const ComputeBenchOptions& options, std::ostream& out);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_COMPUTE_BENCH_H_
