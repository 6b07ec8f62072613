// ringside-bench compute: samples/second of gradient computation per model and device
// (bench/compute_bench.h). Flags parse into ComputeBenchOptions.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/compute_bench.h"

ABSL_FLAG(std::string, models, "4,16,3;784,1024,1024,10",
          "models to measure, ';'-separated Spark-style layer lists");
ABSL_FLAG(std::string, activation, "relu", "hidden-layer activation");
ABSL_FLAG(std::string, devices, "cpu,cuda", "comma-separated devices (cpu, cuda, cuda:<i>)");
ABSL_FLAG(double, min_seconds, 1.0, "measure each model/device for at least this long");

namespace ringside::bench {

int RunComputeCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench compute: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  ComputeBenchOptions options;
  options.models = absl::StrSplit(absl::GetFlag(FLAGS_models), ';', absl::SkipEmpty());
  options.activation = absl::GetFlag(FLAGS_activation);
  options.devices = absl::StrSplit(absl::GetFlag(FLAGS_devices), ',', absl::SkipEmpty());
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  options.batch_size = batch_size > 0 ? batch_size : 128;
  options.min_seconds = absl::GetFlag(FLAGS_min_seconds);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status status = RunComputeBench(options, std::cout); !status.ok()) {
    std::cerr << "ringside-bench compute: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ringside::bench
