// Picks free TCP ports on 127.0.0.1 for processes that must be told their listen address before
// they start (e.g. ring peers given as --peers=127.0.0.1:P0,...). Never use fixed ports.
//
// Picks come from below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range),
// which every port-0 bind and every outgoing connection on the machine draws from: a picked
// port is free when the function returns but not reserved, and in the ephemeral range any
// client connecting anywhere could take it before the child binds it. Below it, only another
// picker can, and each pick starts at a random port of the window. Where that window is too
// small (a range configured to start low) or the range cannot be read, the kernel picks
// (port 0), as before. Prefer binding port 0 in-process where possible.
//
// Thread-safe (no shared state). Errors: INTERNAL with the failing socket call and errno text.
#ifndef RINGSIDE_LAUNCH_FREE_PORT_H_
#define RINGSIDE_LAUNCH_FREE_PORT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside::launch {

// The ports picks are made from, [first, end); empty (first == end) when the kernel picks.
struct PortWindow {
  int first = 0;
  int end = 0;
};

// The window below the ephemeral range whose text (`ip_local_port_range`'s "LOW HIGH") is
// given: [20000, LOW) when that holds at least 1,000 ports, else empty. Text that is not two
// ports in order gives an empty window.
PortWindow PickWindow(absl::string_view ip_local_port_range);

// `count` distinct free ports from `window` (from a random port of it on, wrapping), or from
// the kernel when it is empty: all sockets are held open until every port is known, so no
// port is handed out twice. A window with fewer than `count` bindable ports falls back to the
// kernel for the rest.
absl::StatusOr<std::vector<int>> PickFreePortsIn(const PortWindow& window, int count);

// PickFreePortsIn the window of this machine's ephemeral range.
absl::StatusOr<std::vector<int>> PickFreePorts(int count);
absl::StatusOr<int> PickFreePort();

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_FREE_PORT_H_
