#include "ring/schedule.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace ringside::ring {

absl::Status ValidateTopology(const RingTopology& topology) {
  if (topology.world < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring world size must be at least 1, got ", topology.world));
  }
  if (topology.rank < 0 || topology.rank >= topology.world) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", topology.rank,
                                                   " is outside the ring of ", topology.world,
                                                   " workers (0..", topology.world - 1, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRing(const RingTopology& topology, const std::vector<std::string>& addresses) {
  if (absl::Status status = ValidateTopology(topology); !status.ok()) return status;
  if (addresses.size() != static_cast<size_t>(topology.world)) {
    return absl::InvalidArgumentError(absl::StrCat("ring of ", topology.world, " workers needs ",
                                                   topology.world, " addresses, got ",
                                                   addresses.size()));
  }
  return absl::OkStatus();
}

RingStep RingSchedule::Step(int step) const {
  assert(step >= 0 && step < steps());
  const int phase_step = step < world_ - 1 ? step : step - (world_ - 1);
  if (step < world_ - 1) {
    return RingStep{Mod(rank_ - phase_step), Mod(rank_ - phase_step - 1), /*reduce=*/true};
  }
  return RingStep{Mod(rank_ + 1 - phase_step), Mod(rank_ - phase_step), /*reduce=*/false};
}

}  // namespace ringside::ring
