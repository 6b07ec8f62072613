// The cores this process may use, for the step model's compute and CPU terms and for sharing
// cores out among threads: its affinity mask (`taskset` narrows it), capped by the CPU quota of
// its cgroup and every cgroup above it (a pod's or a container's CPU limit).
//
// Thread-safe (reads /proc and /sys each call; no state).
#ifndef RINGSIDE_COMMON_USABLE_CORES_H_
#define RINGSIDE_COMMON_USABLE_CORES_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace ringside {

// The cores this process may run on: its affinity mask, capped by the CPU quota (cgroup v2
// `cpu.max`) of its cgroup and every cgroup above it, as a pod's or a container's CPU limit.
double UsableCores();

// The cores a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for none) allows; nullopt
// for no quota or text that is not one.
std::optional<double> CoresFromCpuMax(absl::string_view text);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_USABLE_CORES_H_
