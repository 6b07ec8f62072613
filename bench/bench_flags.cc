#include "bench/bench_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(int, workers, 0,
          "Number of worker processes (ranks) for a single world size; 0: use --worlds");
ABSL_FLAG(ringside::bench::IntList, worlds, (ringside::bench::IntList{{2, 4}}),
          "Comma-separated world sizes to sweep when --workers is 0");
ABSL_FLAG(int64_t, elements, 0, "float32 elements per allreduce for a single size; 0: use --sizes");
ABSL_FLAG(ringside::bench::ByteSizeList, sizes,
          (ringside::bench::ByteSizeList{{int64_t{1} << 20, int64_t{16} << 20, int64_t{64} << 20}}),
          "Comma-separated buffer sizes to sweep when --elements is 0 (B, KiB, MiB, GiB; KB, MB, "
          "GB); each a multiple of 4 bytes");
ABSL_FLAG(int, iters, 0,
          "Timed iterations per cell; 0: scale with the size so a cell takes about a second");
ABSL_FLAG(int, warmup, 2, "Untimed warm-up iterations per cell");
ABSL_FLAG(std::string, json, "", "Write one JSON record per cell to this file");
ABSL_FLAG(int, timeout_s, 120,
          "Seconds a cell (all its processes) may take before its processes are killed");
ABSL_FLAG(bool, keep_temp, false,
          "Keep each cell's temporary directory (logs, result files, rendezvous) for inspection");
ABSL_FLAG(
    int, gloo_timeout_s, 30,
    "Seconds each Gloo operation (rendezvous, connect, one allreduce) may take in a Gloo rank");
ABSL_FLAG(int64_t, segment_bytes, 1 << 20,
          "ring, ps and their ranks: largest message of Ringside's ring and shard streams");
ABSL_FLAG(std::string, rank_binary, "",
          "ring, ps: the executable that runs Ringside's rank processes (as `BINARY ring-rank` or "
          "`BINARY ps-rank`); empty: this ringside-bench");
ABSL_FLAG(int, rank, -1, "ring-rank, ps-rank, gloo-rank (internal): this process's rank");
ABSL_FLAG(std::string, result_file, "",
          "ring-rank, ps-rank, gloo-rank (internal): where to write the JSON result");
ABSL_FLAG(int64_t, batch_size, 0,
          "compute: rows per gradient computation (0: 128); train: the global batch, split across "
          "the workers (0: 64)");
ABSL_FLAG(uint64_t, seed, 1, "compute, train: seed for parameters and synthetic data");
ABSL_FLAG(int, ps_shards, 0,
          "ps: parameter-server shards for a single run (0: sweep --shard_counts); train: the "
          "shards of the ps mode (0: 2)");
