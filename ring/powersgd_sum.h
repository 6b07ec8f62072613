// PowerSGD in the ring (--compression=powersgd:R; Vogels et al. 2019, as PyTorch's
// powerSGD_hook): each weight matrix M of the gradient (fan_in x fan_out, this worker's share
// plus its residual) travels as two thin factors, each of which the ring sums with the allreduce
// it always uses, because every worker multiplies by the same factor:
//
//   1. P = M·Q (fan_in x R) for every compressed matrix, then the rest of the gradient whole (the
//      biases, and any matrix too small to gain: R·(m + n) >= m·n): the step's first allreduce.
//   2. P̂, the summed P's columns orthonormalised (Gram-Schmidt, the same bits on every rank as P
//      is); this worker's Q_w = Mᵀ·P̂ (fan_out x R), and its residual M - P̂·Q_wᵀ (the part of M
//      outside P̂'s span, carried into the next step); the second allreduce sums the Q_w into Q.
//   3. The gradient: P̂·Qᵀ for each matrix, the summed rest elsewhere: bit-identical on every
//      rank, the sum every worker's optimiser takes.
//
// Q is kept from step to step (the warm start that makes one power iteration a step enough):
// the next step multiplies by this one's summed Q, the same on every rank. It starts from normal
// draws keyed by the job's seed and the matrix, and a column that sums to zero (a matrix whose
// gradient vanished) is drawn again, keyed by the step, so no factor stays stuck at zero.
//
// Links carry the two buffers' bytes (PowerSgdLayout: RingBytesSentByRank of each, exact in the
// cost model). Steps below the warm-up (--compression_warmup) are one plain allreduce. A sum that
// is not finite fails the step (INVALID_ARGUMENT), never reaches the optimiser.
//
// The residual and Q live as long as this object: one per generation, so every regroup resets
// both on every member alike (ring/compressed_sum.h's rule). Thread-compatible.
#ifndef RINGSIDE_RING_POWERSGD_SUM_H_
#define RINGSIDE_RING_POWERSGD_SUM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "ring/compressed_sum.h"

namespace ringside::ring {

// One compressed weight matrix: its elements in the gradient and its factors in the buffers.
struct PowerSgdMatrix {
  uint64_t offset = 0;  // first element of the row-major rows x cols matrix
  int rows = 0;         // fan_in
  int cols = 0;         // fan_out
  uint64_t p_at = 0;    // its P (R x rows, column by column) in the first buffer
  uint64_t q_at = 0;    // its Q (R x cols, column by column) in the second buffer
};

// Where everything goes: a pure function of (model, R), the same on every rank.
struct PowerSgdLayout {
  std::vector<PowerSgdMatrix> matrices;
  std::vector<ElementRange> whole;  // summed as they are, after the P factors
  uint64_t whole_at = 0;            // where they begin in the first buffer: every matrix's R·rows
  uint64_t first_elements = 0;      // whole_at, then the whole ranges
  uint64_t second_elements = 0;     // every matrix's R·cols
};
PowerSgdLayout PlanPowerSgd(const ModelSpec& spec, int rank);

class PowerSgdRingSum final : public CompressedRingSum {
 public:
  PowerSgdRingSum(int rank, int64_t warmup_steps, uint64_t seed, const ModelSpec& spec);

  int allreduces_per_step() const override { return 2; }
  absl::Status Sum(int64_t step, absl::Span<float> gradient, StepAllreduce allreduce) override;

  const PowerSgdLayout& layout() const { return layout_; }
  absl::Span<const float> residual() const { return residual_; }

 private:
  void ProjectShare(absl::Span<const float> gradient);
  absl::Status SumFactors(int64_t step, absl::Span<float> gradient, StepAllreduce allreduce);
  void ProjectOntoP(const PowerSgdMatrix& at);
  void Reconstruct(size_t matrix, int64_t step, absl::Span<float> gradient);
  void DrawQ(size_t matrix, int column, uint64_t draw);

  const int rank_;
  const int64_t warmup_steps_;
  const uint64_t seed_;
  const PowerSgdLayout layout_;
  std::vector<float> residual_;  // the gradient's shape; zero outside the matrices
  std::vector<float> q_;         // the summed Q of the step before (the second buffer's layout)
  std::vector<float> first_;
  std::vector<float> second_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_POWERSGD_SUM_H_
