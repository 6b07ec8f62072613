// One rank of the Gloo allreduce baseline, run in its own process (like Ringside's workers):
// TCP transport on 127.0.0.1 only, rendezvous through a gloo::rendezvous::FileStore in a
// directory shared by the ranks of one run, then `warmup` untimed and `iters` timed in-place
// float32 sum allreduces, each checked against the deterministic fill of rank_result.h.
//
// Algorithms: kAllreduceRing is gloo::allreduce() with AllreduceOptions::Algorithm::RING (the
// path PyTorch's ProcessGroupGloo and Horovod take); kRingChunked is gloo::AllreduceRingChunked.
//
// Errors: Gloo reports failures with exceptions (gloo::Exception, gloo::EnforceNotMet); they are
// caught here and returned as absl::Status (INTERNAL carrying Gloo's message, timeouts included).
// Every Gloo operation runs under `timeout`, so a dead peer fails the rank instead of hanging it.
// When the binary is built without Gloo, RunGlooRank returns UNIMPLEMENTED.
// Thread-compatible; Gloo's TCP device runs its own I/O thread for the duration of the call.
#ifndef RINGSIDE_BENCH_GLOO_RANK_H_
#define RINGSIDE_BENCH_GLOO_RANK_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/rank_result.h"

namespace ringside::bench {

enum class GlooAlgorithm { kAllreduceRing, kRingChunked };
absl::string_view GlooAlgorithmName(GlooAlgorithm algorithm);  // "ring" / "ring_chunked"
absl::StatusOr<GlooAlgorithm> ParseGlooAlgorithm(absl::string_view text);

// True when this binary was built with Gloo.
bool HaveGloo();

struct GlooRankOptions {
  int rank = 0;
  int world = 0;
  std::string store_dir;  // existing directory shared by all ranks of the run, empty at start
  GlooAlgorithm algorithm = GlooAlgorithm::kAllreduceRing;
  int64_t elements = 0;                        // float32 elements per allreduce
  int iters = 1;                               // timed iterations (>= 1)
  int warmup = 0;                              // untimed iterations before them
  absl::Duration timeout = absl::Seconds(30);  // per Gloo operation (connect, each allreduce)
};

absl::Status ValidateGlooRankOptions(const GlooRankOptions& options);

// Runs the rank to completion. The result's check_ok is false when any iteration's values were
// wrong; that is a result, not an error.
absl::StatusOr<RankResult> RunGlooRank(const GlooRankOptions& options);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_GLOO_RANK_H_
