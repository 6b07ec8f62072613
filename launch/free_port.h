// Picks free TCP ports on 127.0.0.1 for processes that must be told their listen address before
// they start (e.g. ring peers given as --peers=127.0.0.1:P0,...). Never use fixed ports.
//
// Caveat: a picked port is free when the function returns but is not reserved; another process
// may take it before the child binds it. Prefer binding port 0 in-process where possible.
//
// Thread-safe (no shared state). Errors: INTERNAL with the failing socket call and errno text.
#ifndef RINGSIDE_LAUNCH_FREE_PORT_H_
#define RINGSIDE_LAUNCH_FREE_PORT_H_

#include <vector>

#include "absl/status/statusor.h"

namespace ringside::launch {

// Binds 127.0.0.1:0, reads the port the kernel chose and closes the socket.
absl::StatusOr<int> PickFreePort();

// `count` distinct free ports: all sockets are held open until every port is known, so the
// kernel cannot hand out the same port twice.
absl::StatusOr<std::vector<int>> PickFreePorts(int count);

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_FREE_PORT_H_
