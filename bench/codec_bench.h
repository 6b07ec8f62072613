// `ringside-bench codec`: the gradient codecs' own speed (issue 47, point 5). Per codec, the time
// per element of what a sync adds to a step: error feedback's add and the encode
// (ErrorFeedback::Encode) and the receiver's decode (GradientCodec::DecodeAdd), over a gradient
// of `elements` cut into segments as a push is; beside it a plain copy of the same gradient
// (memcpy), the cost an uncompressed sync pays at least once, and error feedback's add alone
// (ErrorFeedback::Add), the part of every codec's time no encoding can remove. PowerSGD, no segment
// codec, is one rank's whole step of factors (ring/powersgd_sum.h) on a matrix of 1024 columns. No
// network. Not a test: numbers depend on the machine (docs/benchmarks.md says how they were
// measured).
//
// Thread-compatible; the functions own what they create. Errors: INVALID_ARGUMENT for bad
// options.
#ifndef RINGSIDE_BENCH_CODEC_BENCH_H_
#define RINGSIDE_BENCH_CODEC_BENCH_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ringside::bench {

struct CodecBenchOptions {
  std::vector<std::string> codecs = {"topk:0.01", "sign", "randomk:0.01",
                                     "powersgd:4"};  // --compression text
  uint64_t elements = 1863690;        // the heavy model's parameters (784,1024,1024,10)
  uint64_t segment_elements = 65536;  // a quarter of the default 1 MiB push window, in floats
  double min_seconds = 1.0;           // each codec (and the copy) for at least this long
  uint64_t seed = 1;
};

struct CodecBenchRecord {
  std::string codec;  // "copy" for the plain copy, "ef-add" for error feedback's add alone
  int64_t rounds = 0;
  double seconds = 0;
  double nanoseconds_per_element = 0;
  double times_copy = 0;         // nanoseconds_per_element over the copy's
  double bytes_per_element = 0;  // payload bytes over elements (4 for the copy)
};

absl::Status ValidateCodecBenchOptions(const CodecBenchOptions& options);

// The copy first, error feedback's add second, then one record per codec, in order.
absl::StatusOr<std::vector<CodecBenchRecord>> MeasureCodecs(const CodecBenchOptions& options);

// MeasureCodecs, printed as a table to `out`.
absl::Status RunCodecBench(const CodecBenchOptions& options, std::ostream& out);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_CODEC_BENCH_H_
