// What `ringside-bench train` measured per implementation and run, read from the two programs
// it starts (`ringside compare --json`, bench/ddp_train.py's JSON line), and its rendering: the
// table, the ratios within each run, and the JSON records. Pure; thread-safe. Errors:
// INTERNAL naming what a program's JSON lacks.
#ifndef RINGSIDE_BENCH_TRAIN_REPORT_H_
#define RINGSIDE_BENCH_TRAIN_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace ringside::bench {

// One implementation's figures in one run.
struct TrainResult {
  std::string implementation;  // "ringside-ring", "ringside-ps", "pytorch-ddp-gloo"
  int run = 0;
  double samples_per_second = 0, step_p50 = 0;
  int64_t peak_rss_bytes = 0;  // the largest worker's (Ringside only)
  // Data with a held-out test set: the final parameters' test accuracy (all implementations run
  // the same steps, so these are at equal steps), the mean of the last few evaluations, and the
  // first evaluation at or above the target (unset: not reached).
  std::optional<double> test_accuracy = {}, test_accuracy_recent = {}, seconds_to_target = {};
  std::optional<int64_t> steps_to_target = {};
};

// Both modes' figures from `ringside compare --json`'s document.
absl::StatusOr<std::vector<TrainResult>> RingsideResults(const nlohmann::json& compare, int run);
// The figures in ddp_train.py's JSON line.
TrainResult TorchResult(const nlohmann::json& ddp, int run);

struct TrainTitle {
  std::string model, data;
  int workers = 0, ps_shards = 0;
  int64_t batch_size = 0, steps = 0;
  double lr = 0, target_accuracy = 0;
  bool tls = false, has_test_set = false;
};
// The title, one row per result, and the ratios of each run's figures, their median and range.
std::string TrainTable(const TrainTitle& title, const std::vector<TrainResult>& results, int runs);
// One record per result.
nlohmann::json TrainRecords(const TrainTitle& title, const std::vector<TrainResult>& results);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_TRAIN_REPORT_H_
