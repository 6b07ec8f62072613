// A compressed ring step (--compression in ring mode, common/compression.h): a policy beside the
// ring's one allreduce, which sums whatever buffers the policy hands it. Two policies:
// CodecRingSum (none and randomk:F, below) and PowerSgdRingSum (powersgd:R, powersgd_sum.h).
//
// CodecRingSum (randomk:F): every worker draws the same coordinates for each block of the gradient,
// so the ring sums only the drawn values, hop by hop, with the allreduce it always uses, and every
// link carries the compact vector's bytes (RingBytesSentByRank over CompactElements: the cost
// model's, exact).
//
//   1. Each block [b, b + n) of kCompressionBlockElements (the last shorter) is error-fed and
//      encoded (common/error_feedback.h), keyed by (job seed, step, b): its k values go into the
//      compact vector, block after block.
//   2. The caller's allreduce sums the compact vector (float32, the ring's own order, the same
//      bits on every rank).
//   3. Each block's summed values are decoded into the gradient (zero where not drawn): the sum
//      every worker's optimiser takes, bit-identical on every rank.
// Steps below the warm-up (--compression_warmup) go uncompressed: the whole gradient is summed.
// Only a codec that sums in a ring (SummableInRing: its payload is its k float32 values) is
// taken; any other fails the step with INVALID_ARGUMENT.
//
// A policy's state (its residual) lives as long as the object: the worker builds one per
// generation, so every regroup (a mode switch, a lost or joined member, a loaded state) resets
// it, the documented rule (docs/architecture.md, "Gradient compression"); a checkpoint never
// carries it. A step that fails leaves the object to be dropped with its generation.
// Thread-compatible: the sync's one thread.
#ifndef RINGSIDE_RING_COMPRESSED_SUM_H_
#define RINGSIDE_RING_COMPRESSED_SUM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/compression.h"
#include "common/error_feedback.h"

namespace ringside::ring {

// The blocks a compressed ring step draws its coordinates in: 64 Ki elements.
inline constexpr uint64_t kCompressionBlockElements = uint64_t{1} << 16;

// The compact vector's length for a gradient of `elements`: each block's k values.
uint64_t CompactElements(const Compression& compression, uint64_t elements);

// Sums a buffer across the ring: `part` numbers the step's allreduces (0 up to
// allreduces_per_step() - 1), each its own ring collective; a warm-up step runs part 0 only.
using StepAllreduce = absl::FunctionRef<absl::Status(int part, absl::Span<float> buffer)>;

class CompressedRingSum {
 public:
  virtual ~CompressedRingSum() = default;
  virtual int allreduces_per_step() const = 0;
  // Leaves the step's (compressed) sum across the ring in `gradient`, the same bits on every rank.
  virtual absl::Status Sum(int64_t step, absl::Span<float> gradient, StepAllreduce allreduce) = 0;
};

class CodecRingSum final : public CompressedRingSum {
 public:
  CodecRingSum(const Compression& compression, int64_t warmup_steps, uint64_t seed,
               uint64_t elements);

  int allreduces_per_step() const override { return 1; }
  // The whole gradient in a warm-up step (or with none), else the compact vector.
  absl::Status Sum(int64_t step, absl::Span<float> gradient, StepAllreduce allreduce) override;

  absl::Span<const float> residual() const { return feedback_.residual(); }

 private:
  const Compression compression_;
  const int64_t warmup_steps_;
  const uint64_t seed_;
  std::unique_ptr<GradientCodec> codec_;  // null for none
  ErrorFeedback feedback_;
  std::vector<float> compact_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_COMPRESSED_SUM_H_
