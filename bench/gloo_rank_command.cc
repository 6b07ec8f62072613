// `ringside-bench gloo-rank`: one Gloo allreduce rank, started by `ringside-bench ring` (one
// process per rank, like Ringside's workers). Writes its RankResult JSON to --result_file.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/gloo_rank.h"
#include "common/rank_result.h"

ABSL_FLAG(int, world, 0, "gloo-rank (internal): number of ranks");
ABSL_FLAG(std::string, store_dir, "",
          "gloo-rank (internal): rendezvous directory shared by the ranks (gloo FileStore)");
ABSL_FLAG(std::string, algorithm, "ring",
          "gloo-rank (internal): ring (gloo::allreduce, Algorithm::RING) or ring_chunked "
          "(gloo::AllreduceRingChunked)");

namespace ringside::bench {
namespace {

absl::StatusOr<GlooRankOptions> OptionsFromFlags() {
  GlooRankOptions options;
  options.rank = absl::GetFlag(FLAGS_rank);
  options.world = absl::GetFlag(FLAGS_world);
  options.store_dir = absl::GetFlag(FLAGS_store_dir);
  absl::StatusOr<GlooAlgorithm> algorithm = ParseGlooAlgorithm(absl::GetFlag(FLAGS_algorithm));
  if (!algorithm.ok()) return algorithm.status();
  options.algorithm = *algorithm;
  options.elements = absl::GetFlag(FLAGS_elements);
  options.iters = absl::GetFlag(FLAGS_iters);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_gloo_timeout_s));
  if (absl::Status status = ValidateGlooRankOptions(options); !status.ok()) return status;
  if (absl::GetFlag(FLAGS_result_file).empty()) {
    return absl::InvalidArgumentError("--result_file is required");
  }
  return options;
}

}  // namespace

int RunGlooRankCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench gloo-rank: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  absl::StatusOr<GlooRankOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "ringside-bench gloo-rank: " << options.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<RankResult> result = RunGlooRank(*options);
  if (!result.ok()) {
    std::cerr << "ringside-bench gloo-rank: " << result.status() << "\n";
    return 1;
  }
  if (absl::Status status = WriteRankResult(absl::GetFlag(FLAGS_result_file), *result);
      !status.ok()) {
    std::cerr << "ringside-bench gloo-rank: " << status << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ringside::bench
