// What a 16-bit wire dtype costs in accuracy, measured on the job itself (issue 27): on sampled
// steps the worker keeps a copy of its gradient share before the step's sync (ring or ps) rounds
// it, and after the step (outside its phases, so no step time includes it) sums the kept shares
// of every worker exactly, in float32, with one more ring allreduce marked as control traffic
// (not in the link payload counters, which stay the cost model's). The synchronised gradient the
// step applied is then compared with that exact sum:
//   relative error = ||synced - exact||_2 / ||exact||_2.
// Chosen over estimating the error locally because no member holds the others' unrounded shares
// (the shard has the decoded ones only, a ring hop a partial sum): an exact reference needs them
// all, and a sampled, uncounted side sum is the honest and cheap way to get it. The reference is
// the fp32 ring's sum (ring order), which is what fp32 training applies in ring mode; in ps mode
// fp32 sums in rank order, which differs from it by float32 rounding only (about 1e-7), far below
// a 16-bit wire's error.
//
// fp32 on the wire is exact by definition here: nothing is sampled (no side traffic at all).
// Needs the worker's ring: a static ps cluster has none, and measures nothing.
//
// Thread-compatible (the training thread's). Errors: the side allreduce's.
#ifndef RINGSIDE_RING_WIRE_ERROR_H_
#define RINGSIDE_RING_WIRE_ERROR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/wire_dtype.h"
#include "ring/collective.h"

namespace ringside::ring {

class WireErrorProbe {
 public:
  // Every this many steps (step 0 first) the error is measured.
  static constexpr int64_t kEvery = 10;

  // Whether step `step` is sampled with `dtype` on the wire (never for fp32).
  static bool Due(WireDtype dtype, int64_t step) {
    return dtype != WireDtype::kFp32 && step >= 0 && step % kEvery == 0;
  }

  // Before the sync: keeps a copy of this worker's share.
  void Keep(absl::Span<const float> share) { kept_.assign(share.begin(), share.end()); }
  // The same a part at a time (an overlapped step keeps each bucket as it is complete): `part`
  // is elements [offset, offset + part.size()) of a share of `size` elements.
  void KeepPart(size_t size, size_t offset, absl::Span<const float> part) {
    kept_.resize(size);
    std::copy(part.begin(), part.end(), kept_.begin() + static_cast<ptrdiff_t>(offset));
  }
  bool holds_share() const { return !kept_.empty(); }
  // A step that failed after Keep: its copy must not be measured against a later step.
  void Forget() { kept_.clear(); }

  // After the step: every member of the ring calls it for the same step (the same `collective`
  // number everywhere, after the step's own). Returns the relative error of `synced` (the sum
  // the step applied) against the exact float32 sum of the kept shares, and forgets the copy.
  absl::StatusOr<double> Measure(Collective& ring, uint64_t collective,
                                 absl::Span<const float> synced, const AllreduceOptions& control);

 private:
  std::vector<float> kept_;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_WIRE_ERROR_H_
