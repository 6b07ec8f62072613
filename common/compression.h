// The job's gradient compression (--compression, --compression_warmup): which codec a
// synchronisation uses, where each fits, and when it starts. What each kind sends is its codec's
// (gradient_codec.h); the residual that carries what it did not send into the next step is
// error_feedback.h's.
//
//   none        every value (the default; --wire_dtype applies)
//   topk:F      ps only: each segment's ceil(F·n) largest magnitudes with their indices
//   sign        ps only: one bit per element and a scale per segment
//   randomk:F   ring only: the values of ceil(F·n) coordinates drawn from a seed all workers
//               share, so partial sums add hop by hop
//   powersgd:R  ring only: each weight matrix as two rank-R factors the ring sums in turn
//               (ring/powersgd_sum.h); no segment codec
//
// Top-k and sign cannot be summed by a ring hop (each worker's indices and scales are its
// own), so they fit the parameter server only. For the first --compression_warmup steps
// nothing is compressed (DeepSpeed's freeze_step): the gradient travels as --wire_dtype says.
//
// Pure; thread-safe.
#ifndef RINGSIDE_COMMON_COMPRESSION_H_
#define RINGSIDE_COMMON_COMPRESSION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/gradient_codec.h"
#include "common/metrics.h"

namespace ringside {

enum class CompressionKind { kNone, kTopK, kSign, kRandomK, kPowerSgd };

// The largest PowerSGD rank: factors of R columns, R·(m + n) values for an m x n matrix.
inline constexpr int kMaxPowerSgdRank = 32;

struct Compression {
  CompressionKind kind = CompressionKind::kNone;
  float fraction = 1;  // topk and randomk: F in (0, 1]; 1 otherwise
  int rank = 0;        // powersgd: R in [1, kMaxPowerSgdRank]; 0 otherwise
  friend bool operator==(const Compression& a, const Compression& b) {
    return a.kind == b.kind && a.fraction == b.fraction && a.rank == b.rank;
  }
  friend bool operator!=(const Compression& a, const Compression& b) { return !(a == b); }
};

// "none", "topk:F", "sign", "randomk:F" (F in (0, 1], e.g. 0.01), "powersgd:R" (R an integer in
// [1, kMaxPowerSgdRank]); anything else is INVALID_ARGUMENT naming the choices. And back: the
// same text (F in the fewest digits that read back to it).
absl::StatusOr<Compression> ParseCompression(absl::string_view text);
std::string CompressionText(const Compression& compression);

// Whether a ring hop can add two of its payloads without decoding them (none, randomk,
// powersgd).
bool SummableInRing(CompressionKind kind);
// OK where `compression` fits `mode` (ring: none, randomk, powersgd; ps: none, topk, sign); else
// INVALID_ARGUMENT saying which kinds fit it.
absl::Status CheckCompressionFitsMode(const Compression& compression, SyncMode mode);

// Whether step `step` (0-based) is compressed: the kind is not none and the warm-up is over.
constexpr bool CompressesStep(const Compression& compression, int64_t warmup_steps, int64_t step) {
  return compression.kind != CompressionKind::kNone && step >= warmup_steps;
}

// The segment codec of `compression`; null for none and for powersgd (a pair of allreduces per
// weight matrix, not a codec of segments: ring/powersgd_sum.h).
std::unique_ptr<GradientCodec> MakeGradientCodec(const Compression& compression);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_COMPRESSION_H_
