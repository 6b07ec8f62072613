// ringside-compute-bench: runs the compute benchmark (bench/compute_bench.h) from the command
// line until `ringside-bench compute` absorbs it. Flags parse into ComputeBenchOptions.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "bench/compute_bench.h"

ABSL_FLAG(std::string, models, "4,16,3;784,1024,1024,10",
          "models to measure, ';'-separated Spark-style layer lists");
ABSL_FLAG(std::string, activation, "relu", "hidden-layer activation");
ABSL_FLAG(std::string, devices, "cpu,cuda", "comma-separated devices (cpu, cuda, cuda:<i>)");
ABSL_FLAG(int64_t, batch_size, 128, "rows per gradient computation");
ABSL_FLAG(double, min_seconds, 1.0, "measure each model/device for at least this long");
ABSL_FLAG(uint64_t, seed, 1, "seed for parameters and synthetic data");

int main(int argc, char** argv) {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "bench/compute_main");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage("Samples/second of gradient computation per model and device.");
  absl::ParseCommandLine(argc, argv);

  ringside::bench::ComputeBenchOptions options;
  options.models = absl::StrSplit(absl::GetFlag(FLAGS_models), ';', absl::SkipEmpty());
  options.activation = absl::GetFlag(FLAGS_activation);
  options.devices = absl::StrSplit(absl::GetFlag(FLAGS_devices), ',', absl::SkipEmpty());
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.min_seconds = absl::GetFlag(FLAGS_min_seconds);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status status = ringside::bench::RunComputeBench(options, std::cout); !status.ok()) {
    std::cerr << "ringside-compute-bench: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
