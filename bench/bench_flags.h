// Command-line flags shared by the benchmark's subcommands (ring, ps, compute and the rank
// processes). Abseil flags are process-global, so a flag name may be defined only once in the
// binary: a subcommand that needs one of these includes this header instead of defining its own.
// Subcommand-specific flags live in that subcommand's .cc file.
//
// Read them only from `main`-side command code (never from library code), then pass plain values.
#ifndef RINGSIDE_BENCH_BENCH_FLAGS_H_
#define RINGSIDE_BENCH_BENCH_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "bench/flag_types.h"

ABSL_DECLARE_FLAG(int, workers);
ABSL_DECLARE_FLAG(ringside::bench::IntList, worlds);
ABSL_DECLARE_FLAG(int64_t, elements);
ABSL_DECLARE_FLAG(ringside::bench::ByteSizeList, sizes);
ABSL_DECLARE_FLAG(int, iters);
ABSL_DECLARE_FLAG(int, warmup);
ABSL_DECLARE_FLAG(std::string, json);
ABSL_DECLARE_FLAG(int, timeout_s);
ABSL_DECLARE_FLAG(bool, keep_temp);
ABSL_DECLARE_FLAG(int, gloo_timeout_s);
ABSL_DECLARE_FLAG(int64_t, segment_bytes);
ABSL_DECLARE_FLAG(std::string, rank_binary);
ABSL_DECLARE_FLAG(int, rank);
ABSL_DECLARE_FLAG(std::string, result_file);
ABSL_DECLARE_FLAG(int64_t, batch_size);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(int, ps_shards);

#endif  // RINGSIDE_BENCH_BENCH_FLAGS_H_
