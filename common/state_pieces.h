// The job's state read a piece at a time: [parameters..., optimiser state...], the layout of a
// checkpoint (common/checkpoint_store.h) and of a state hand-over. A reader lets a member stream
// its state (a checkpoint upload) without a copy of it. Header only; thread-compatible.
#ifndef RINGSIDE_COMMON_STATE_PIECES_H_
#define RINGSIDE_COMMON_STATE_PIECES_H_

#include <algorithm>
#include <cstdint>
#include <functional>

#include "absl/types/span.h"

namespace ringside {

// Fills `out` with elements [offset, offset + out.size()) of the state.
using StatePieceReader = std::function<void(uint64_t offset, absl::Span<float> out)>;

// A reader over a state held whole, in two spans (which must outlive it). A piece may straddle
// the two; it must lie within the state.
inline StatePieceReader StatePiecesOf(absl::Span<const float> parameters,
                                      absl::Span<const float> optimizer_state) {
  return [parameters, optimizer_state](uint64_t offset, absl::Span<float> out) {
    // The piece's part in the parameters (none when it begins past them), then the rest.
    const uint64_t in_parameters =
        offset < parameters.size() ? std::min<uint64_t>(out.size(), parameters.size() - offset) : 0;
    if (in_parameters > 0) std::copy_n(parameters.begin() + offset, in_parameters, out.begin());
    if (out.size() > in_parameters) {
      std::copy_n(optimizer_state.begin() + (offset + in_parameters - parameters.size()),
                  out.size() - in_parameters, out.begin() + in_parameters);
    }
  };
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STATE_PIECES_H_
