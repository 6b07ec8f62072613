// The wire error of a 16-bit --wire_dtype, sampled on the job itself (ring/wire_error.h says how):
// on a sampled step this worker's share is kept as the sync takes it, whole or bucket by bucket,
// and once the step is complete the exact float32 sum of the kept shares over the ring is
// compared with the sum the step applied; the largest relative error so far, per mode, is
// ringside_wire_relative_error. Without a ring (a static ps cluster) nothing is sampled: there is
// no way to the exact sum. A step listener (worker/step_listener.h).
// Thread-compatible: a bucket's part is kept on an overlapped step's sync thread, before the
// step ends.
#ifndef RINGSIDE_WORKER_WIRE_ERROR_SAMPLER_H_
#define RINGSIDE_WORKER_WIRE_ERROR_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/wire_dtype.h"
#include "ring/allreduce.h"
#include "ring/collective.h"
#include "ring/wire_error.h"
#include "worker/overlapped_sync.h"
#include "worker/parameter_sync.h"
#include "worker/step_listener.h"

namespace ringside::worker {

class WireErrorSampler final : public StepListener {
 public:
  // `ring` may be null (nothing sampled); `gradient` is the step's buffer (a bucket's part is
  // prepared for the wire in it), which holds the applied sum once the step is complete. Everything
  // passed must outlive the sampler.
  WireErrorSampler(ring::Collective* ring, Metrics& metrics, WireDtype dtype,
                   std::vector<float>& gradient, ring::AllreduceOptions control);

  // A protocol's sum that keeps this worker's share first on sampled steps.
  SumShares Keeping(SumShares sum);
  // The same for an overlapped step, bucket by bucket as each is complete, then `prepare` (may
  // be null) on the bucket's part of the gradient.
  PrepareBucket KeepingBuckets(std::function<void(absl::Span<float>)> prepare);
  // The generation's ring collective that carries step `step`'s exact sum (the sync's numbering:
  // worker/generation_sync.h); set as each generation's sync is built.
  void set_collective_of(std::function<uint64_t(int64_t step)> collective_of) {
    collective_of_ = std::move(collective_of);
  }

  // Forgets a share kept by a step that failed.
  void BeforeStep(const GenerationView& generation, const MemberState& state) override;
  // A sampled step's error into the metrics; the side allreduce's error fails the generation.
  absl::Status AfterStep(const CompletedStep& step) override;

 private:
  ring::Collective* const ring_;
  Metrics& metrics_;
  const WireDtype dtype_;
  std::vector<float>& gradient_;  // the member's step buffer
  const ring::AllreduceOptions control_;
  std::function<uint64_t(int64_t step)> collective_of_;
  ring::WireErrorProbe probe_;
  double largest_[2] = {0, 0};  // by SyncMode: what ringside_wire_relative_error shows
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_WIRE_ERROR_SAMPLER_H_
