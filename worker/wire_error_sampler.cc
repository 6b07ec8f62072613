#include "worker/wire_error_sampler.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"

namespace ringside::worker {

WireErrorSampler::WireErrorSampler(ring::Collective* ring, Metrics& metrics, WireDtype dtype,
                                   std::vector<float>& gradient, ring::AllreduceOptions control)
    : ring_(ring), metrics_(metrics), dtype_(dtype), gradient_(gradient), control_(control) {}

SumShares WireErrorSampler::Keeping(SumShares sum) {
  if (ring_ == nullptr) return sum;
  return [this, sum = std::move(sum)](int64_t step, absl::Span<float> g) {
    if (ring::WireErrorProbe::Due(dtype_, step)) probe_.Keep(g);
    return sum(step, g);
  };
}

PrepareBucket WireErrorSampler::KeepingBuckets(std::function<void(absl::Span<float>)> prepare) {
  return [this, prepare = std::move(prepare)](int64_t step, int, ElementRange range) {
    // The step's buffer, written by the compute: the sync thread reads the bucket it was given.
    const absl::Span<float> part = absl::MakeSpan(gradient_).subspan(range.begin, range.size());
    if (ring_ != nullptr && ring::WireErrorProbe::Due(dtype_, step)) {
      probe_.KeepPart(gradient_.size(), range.begin, part);
    }
    if (prepare) prepare(part);
  };
}

void WireErrorSampler::BeforeStep(const GenerationView&, const MemberState&) { probe_.Forget(); }

absl::Status WireErrorSampler::AfterStep(const CompletedStep& step) {
  if (!ring::WireErrorProbe::Due(dtype_, step.step) || !probe_.holds_share() || !collective_of_) {
    return absl::OkStatus();
  }
  // The buffer holds the sum the step applied (the optimiser reads it, never writes it).
  ASSIGN_OR_RETURN(const double error,
                   probe_.Measure(*ring_, collective_of_(step.step), gradient_, control_));
  const SyncMode mode = step.generation.mode;
  double& largest = largest_[mode == SyncMode::kRing ? 0 : 1];
  largest = std::max(largest, error);
  metrics_.WireRelativeError(mode).Set(largest);
  metrics_.WireErrorSamples(mode).Increment();
  return absl::OkStatus();
}

}  // namespace ringside::worker
