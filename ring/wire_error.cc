#include "ring/wire_error.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::ring {

absl::StatusOr<double> WireErrorProbe::Measure(Collective& ring, uint64_t collective,
                                               absl::Span<const float> synced,
                                               const AllreduceOptions& control) {
  std::vector<float> exact = std::exchange(kept_, {});
  if (exact.size() != synced.size()) {
    return absl::InternalError(absl::StrCat("the kept share has ", exact.size(),
                                            " values, the synchronised gradient ", synced.size()));
  }
  AllreduceOptions side = control;
  side.wire_dtype = WireDtype::kFp32;  // the reference: exact float32 shares, summed in float32
  side.control = true;                 // not training traffic: the link counters stay the model's
  side.op = ReduceOp::kSum;
  RETURN_IF_ERROR(Annotate(ring.Allreduce(collective, absl::MakeSpan(exact), side),
                           "the wire error's exact float32 sum"));
  return RelativeL2Error(synced, exact);
}

}  // namespace ringside::ring
