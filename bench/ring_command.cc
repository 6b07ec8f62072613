// `ringside-bench ring`: Ringside's ring allreduce against Gloo's (gloo::allreduce with
// Algorithm::RING, and gloo::AllreduceRingChunked), each rank a separate process on loopback,
// over a sweep of world sizes and buffer sizes. Prints a table; --json writes the records.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/flag_types.h"
#include "bench/rank_processes.h"
#include "bench/ring_report.h"
#include "bench/ring_runner.h"
#include "common/grpc_util.h"

ABSL_FLAG(ringside::bench::ImplementationList, implementations,
          (ringside::bench::ImplementationList{
              {ringside::bench::Implementation::kRingside,
               ringside::bench::Implementation::kGlooAllreduceRing,
               ringside::bench::Implementation::kGlooRingChunked}}),
          "ring: comma-separated implementations to run: ringside, gloo_allreduce_ring, "
          "gloo_ring_chunked");

namespace ringside::bench {
namespace {

constexpr int kMaxWorkers = 64;

struct RingCommandOptions {
  std::vector<Implementation> implementations;
  std::vector<int> worlds;
  std::vector<int64_t> sizes;  // bytes
  int iters = 0;               // 0: DefaultIters(size)
  int warmup = 0;
  std::string json_path;
  RunnerConfig runner;
};

absl::StatusOr<RingCommandOptions> OptionsFromFlags() {
  RingCommandOptions options;
  options.implementations = absl::GetFlag(FLAGS_implementations).values;
  const int workers = absl::GetFlag(FLAGS_workers);
  options.worlds = workers != 0 ? std::vector<int>{workers} : absl::GetFlag(FLAGS_worlds).values;
  for (int world : options.worlds) {
    if (world < 2 || world > kMaxWorkers) {
      return absl::InvalidArgumentError(absl::StrCat("--workers/--worlds: world size ", world,
                                                     " is outside [2, ", kMaxWorkers, "]"));
    }
  }
  const int64_t elements = absl::GetFlag(FLAGS_elements);
  if (elements < 0) return absl::InvalidArgumentError("--elements: must be >= 0");
  options.sizes =
      elements > 0 ? std::vector<int64_t>{elements * 4} : absl::GetFlag(FLAGS_sizes).bytes;
  options.iters = absl::GetFlag(FLAGS_iters);
  if (options.iters < 0) return absl::InvalidArgumentError("--iters: must be >= 0 (0: auto)");
  options.warmup = absl::GetFlag(FLAGS_warmup);
  if (options.warmup < 0) return absl::InvalidArgumentError("--warmup: must be >= 0");
  options.json_path = absl::GetFlag(FLAGS_json);

  RunnerConfig& runner = options.runner;
  runner.segment_bytes = absl::GetFlag(FLAGS_segment_bytes);
  if (absl::Status status = ValidateSegmentBytes(runner.segment_bytes); !status.ok()) {
    return status;
  }
  const int timeout_s = absl::GetFlag(FLAGS_timeout_s);
  const int gloo_timeout_s = absl::GetFlag(FLAGS_gloo_timeout_s);
  if (timeout_s <= 0) return absl::InvalidArgumentError("--timeout_s: must be > 0");
  if (gloo_timeout_s <= 0) return absl::InvalidArgumentError("--gloo_timeout_s: must be > 0");
  runner.timeout = absl::Seconds(timeout_s);
  runner.gloo_timeout = absl::Seconds(gloo_timeout_s);
  runner.keep_temp = absl::GetFlag(FLAGS_keep_temp);
  absl::StatusOr<std::string> self = SelfExecutable();
  if (!self.ok()) return self.status();
  runner.self_binary = *self;
  runner.rank_binary = absl::GetFlag(FLAGS_rank_binary);
  if (runner.rank_binary.empty()) runner.rank_binary = *self;
  return options;
}

// Implementations vary fastest, so the rows compared with each other run back to back and
// share the machine's state of the moment.
std::vector<CellSpec> PlanCells(const RingCommandOptions& options) {
  std::vector<CellSpec> cells;
  for (int world : options.worlds) {
    for (int64_t bytes : options.sizes) {
      for (Implementation implementation : options.implementations) {
        CellSpec spec;
        spec.implementation = implementation;
        spec.workers = world;
        spec.elements = bytes / 4;
        spec.iters = options.iters > 0 ? options.iters : DefaultIters(bytes);
        spec.warmup = options.warmup;
        cells.push_back(spec);
      }
    }
  }
  return cells;
}

}  // namespace

int RunRingCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench ring: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  absl::StatusOr<RingCommandOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "ringside-bench ring: " << options.status().message() << "\n";
    return 1;
  }
  const std::vector<CellSpec> plan = PlanCells(*options);
  std::vector<CellResult> cells;
  for (size_t i = 0; i < plan.size(); ++i) {
    const CellSpec& spec = plan[i];
    cells.push_back(RunWithProgress(
        static_cast<int>(i + 1), static_cast<int>(plan.size()),
        absl::StrFormat("%s N=%d %s, %d iters", ImplementationName(spec.implementation),
                        spec.workers, FormatByteSize(spec.bytes()), spec.iters),
        [&] { return RunCell(options->runner, spec); }));
  }
  const std::vector<ReportRow> rows = BuildRows(cells);
  bool all_ok = true;
  for (const ReportRow& row : rows) all_ok = all_ok && row.cell.ran && row.cell.check_ok;
  return FinishSweep("ring", FormatTable(rows), all_ok, options->json_path, ToJson(rows));
}

}  // namespace ringside::bench
