#include "worker/member_state.h"

#include <algorithm>

#include "server/ps/shard_transfer.h"

namespace ringside::worker {

void MemberState::ReadPiece(absl::Span<const float> held, size_t offset,
                            absl::Span<float> piece) const {
  if (!held.empty()) {
    std::copy_n(held.begin() + offset, piece.size(), piece.begin());
    return;
  }
  // The whole job's range: the parameters, then the optimiser's state in its own layout.
  server::JobStateView{0, parameters, optimizer.get()}.CopyRange({0, parameters.size()}, offset,
                                                                 piece);
}

}  // namespace ringside::worker
