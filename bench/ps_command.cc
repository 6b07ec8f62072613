// `ringside-bench ps`: push-pull steps against a sharded parameter server (N rank
// processes, S ringside-ps shards, all on loopback) next to Ringside's ring allreduce of the same
// N and K measured in the same run, over a sweep of world sizes, shard counts and buffer sizes.
// Prints a table; --json writes the records.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/flag_types.h"
#include "bench/ps_report.h"
#include "bench/ps_runner.h"
#include "bench/rank_processes.h"
#include "bench/ring_runner.h"
#include "common/grpc_util.h"

ABSL_FLAG(ringside::bench::IntList, shard_counts, (ringside::bench::IntList{{1, 2, 4}}),
          "ps: comma-separated shard counts to sweep when --ps_shards is 0");
ABSL_FLAG(std::string, ps_binary, "",
          "ps: the ringside-ps executable; empty: the one next to this binary");
// Defined by the ring command (flag names are global to the binary). The PS cells and their
// ring counterparts use the same worker binary and the same segment size.
ABSL_DECLARE_FLAG(int64_t, segment_bytes);

namespace ringside::bench {
namespace {

constexpr int kMaxWorkers = 64;
constexpr int kMaxShards = 64;

struct PsCommandOptions {
  std::vector<int> worlds;
  std::vector<int> shard_counts;
  std::vector<int64_t> sizes;  // bytes
  int iters = 0;               // 0: DefaultIters(size)
  int warmup = 0;
  std::string json_path;
  PsRunnerConfig ps;
  RunnerConfig ring;
};

absl::Status CheckRange(const std::vector<int>& values, int low, int high, const char* flags,
                        const char* what) {
  for (int value : values) {
    if (value < low || value > high) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags, ": ", what, " ", value, " is outside [", low, ", ", high, "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PsCommandOptions> OptionsFromFlags() {
  PsCommandOptions options;
  const int workers = absl::GetFlag(FLAGS_workers);
  options.worlds = workers != 0 ? std::vector<int>{workers} : absl::GetFlag(FLAGS_worlds).values;
  // N >= 2 because every PS cell is compared with a ring of the same N.
  if (absl::Status status =
          CheckRange(options.worlds, 2, kMaxWorkers, "--workers/--worlds", "world size");
      !status.ok()) {
    return status;
  }
  const int shards = absl::GetFlag(FLAGS_ps_shards);
  options.shard_counts =
      shards != 0 ? std::vector<int>{shards} : absl::GetFlag(FLAGS_shard_counts).values;
  if (absl::Status status = CheckRange(options.shard_counts, 1, kMaxShards,
                                       "--ps_shards/--shard_counts", "shard count");
      !status.ok()) {
    return status;
  }
  const int64_t elements = absl::GetFlag(FLAGS_elements);
  if (elements < 0) return absl::InvalidArgumentError("--elements: must be >= 0");
  options.sizes =
      elements > 0 ? std::vector<int64_t>{elements * 4} : absl::GetFlag(FLAGS_sizes).bytes;
  for (int64_t bytes : options.sizes) {
    for (int count : options.shard_counts) {
      if (bytes / 4 < count) {
        return absl::InvalidArgumentError(absl::StrCat("--sizes/--elements: ", bytes / 4,
                                                       " elements cannot fill ", count, " shards"));
      }
    }
  }
  options.iters = absl::GetFlag(FLAGS_iters);
  if (options.iters < 0) return absl::InvalidArgumentError("--iters: must be >= 0 (0: auto)");
  options.warmup = absl::GetFlag(FLAGS_warmup);
  if (options.warmup < 0) return absl::InvalidArgumentError("--warmup: must be >= 0");
  options.json_path = absl::GetFlag(FLAGS_json);

  const int64_t segment_bytes = absl::GetFlag(FLAGS_segment_bytes);
  if (absl::Status status = ValidateSegmentBytes(segment_bytes); !status.ok()) return status;
  const int timeout_s = absl::GetFlag(FLAGS_timeout_s);
  if (timeout_s <= 0) return absl::InvalidArgumentError("--timeout_s: must be > 0");
  absl::StatusOr<std::string> self = SelfExecutable();
  if (!self.ok()) return self.status();
  const std::string bin_dir = self->substr(0, self->rfind('/') + 1);
  std::string rank_binary = absl::GetFlag(FLAGS_rank_binary);
  if (rank_binary.empty()) rank_binary = *self;
  const bool keep_temp = absl::GetFlag(FLAGS_keep_temp);

  PsRunnerConfig& ps = options.ps;
  ps.ps_binary = absl::GetFlag(FLAGS_ps_binary);
  if (ps.ps_binary.empty()) ps.ps_binary = bin_dir + "ringside-ps";
  ps.rank_binary = rank_binary;
  ps.segment_bytes = segment_bytes;
  ps.timeout = absl::Seconds(timeout_s);
  ps.keep_temp = keep_temp;

  RunnerConfig& ring = options.ring;
  ring.self_binary = *self;
  ring.rank_binary = rank_binary;
  ring.segment_bytes = segment_bytes;
  ring.timeout = absl::Seconds(timeout_s);
  ring.keep_temp = keep_temp;
  return options;
}

}  // namespace

int RunPsCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench ps: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  absl::StatusOr<PsCommandOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "ringside-bench ps: " << options.status().message() << "\n";
    return 1;
  }
  const int total = static_cast<int>(options->worlds.size() * options->sizes.size() *
                                     (1 + options->shard_counts.size()));
  int index = 0;
  std::vector<CellResult> ring_cells;
  std::vector<CellResult> ps_cells;
  // The ring cell runs once per (N, K), right before the PS cells it is compared with, so they
  // share the machine's state of the moment.
  for (int world : options->worlds) {
    for (int64_t bytes : options->sizes) {
      const int iters = options->iters > 0 ? options->iters : DefaultIters(bytes);
      CellSpec ring;
      ring.implementation = Implementation::kRingside;
      ring.workers = world;
      ring.elements = bytes / 4;
      ring.iters = iters;
      ring.warmup = options->warmup;
      ring_cells.push_back(RunWithProgress(
          ++index, total,
          absl::StrFormat("ringside N=%d %s, %d iters", world, FormatByteSize(bytes), iters),
          [&] { return RunCell(options->ring, ring); }));
      for (int shards : options->shard_counts) {
        CellSpec spec;
        spec.implementation = Implementation::kPs;
        spec.workers = world;
        spec.shards = shards;
        spec.elements = bytes / 4;
        spec.iters = iters;
        spec.warmup = options->warmup;
        ps_cells.push_back(RunWithProgress(++index, total,
                                           absl::StrFormat("ps N=%d S=%d %s, %d iters", world,
                                                           shards, FormatByteSize(bytes), iters),
                                           [&] { return RunPsCell(options->ps, spec); }));
      }
    }
  }
  const std::vector<PsReportRow> rows = BuildPsRows(ps_cells, ring_cells);
  bool all_ok = true;
  for (const PsReportRow& row : rows) all_ok = all_ok && row.cell.ran && row.cell.check_ok;
  return FinishSweep("ps", FormatPsTable(rows), all_ok, options->json_path, PsToJson(rows));
}

}  // namespace ringside::bench
