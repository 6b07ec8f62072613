// ringside-bench codec: the gradient codecs' encode + error update + decode per element beside a
// plain copy (bench/codec_bench.h). Flags parse into CodecBenchOptions.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/codec_bench.h"
#include "bench/commands.h"

ABSL_FLAG(std::string, codecs, "topk:0.01;sign;randomk:0.01;powersgd:4",
          "codecs to measure, ';'-separated --compression values");
ABSL_FLAG(uint64_t, codec_elements, 1863690,
          "float32 elements of the gradient (the heavy model's)");
ABSL_FLAG(uint64_t, segment_elements, 65536, "elements per segment (a push's)");
ABSL_FLAG(double, codec_seconds, 1.0, "measure each codec and the copy for at least this long");

namespace ringside::bench {

int RunCodecCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench codec: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  CodecBenchOptions options;
  options.codecs = absl::StrSplit(absl::GetFlag(FLAGS_codecs), ';', absl::SkipEmpty());
  options.elements = absl::GetFlag(FLAGS_codec_elements);
  options.segment_elements = absl::GetFlag(FLAGS_segment_elements);
  options.min_seconds = absl::GetFlag(FLAGS_codec_seconds);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status status = RunCodecBench(options, std::cout); !status.ok()) {
    std::cerr << "ringside-bench codec: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ringside::bench
