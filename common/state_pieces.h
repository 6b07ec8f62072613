// The job's state a piece at a time: [parameters..., optimiser state...], the layout of a
// checkpoint (common/checkpoint_store.h) and of a state hand-over. A reader lets a member stream
// its state (a checkpoint upload) without a copy of it; where a piece lies in the two parts is
// computed here once, for every reader and writer. Header only; thread-compatible.
#ifndef RINGSIDE_COMMON_STATE_PIECES_H_
#define RINGSIDE_COMMON_STATE_PIECES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>

#include "absl/types/span.h"

namespace ringside {

// Fills `out` with elements [offset, offset + out.size()) of the state.
using StatePieceReader = std::function<void(uint64_t offset, absl::Span<float> out)>;

// Where elements [offset, offset + count) of [parameters..., optimiser state...] lie, with
// `parameters` parameters: the first `in_parameters` at `offset` in the parameters (none when the
// piece begins past them), the other `in_state` from `state_offset` in the optimiser's state.
struct StatePieceSplit {
  uint64_t in_parameters = 0;
  uint64_t in_state = 0;
  uint64_t state_offset = 0;
};
inline StatePieceSplit SplitStatePiece(uint64_t offset, uint64_t count, uint64_t parameters) {
  StatePieceSplit split;
  split.in_parameters = offset < parameters ? std::min(count, parameters - offset) : 0;
  split.in_state = count - split.in_parameters;
  if (split.in_state > 0) split.state_offset = offset + split.in_parameters - parameters;
  return split;
}

// A reader over a state held whole, in two spans (which must outlive it). A piece may straddle
// the two; it must lie within the state.
inline StatePieceReader StatePiecesOf(absl::Span<const float> parameters,
                                      absl::Span<const float> optimizer_state) {
  return [parameters, optimizer_state](uint64_t offset, absl::Span<float> out) {
    const StatePieceSplit split = SplitStatePiece(offset, out.size(), parameters.size());
    std::copy_n(parameters.begin() + offset, split.in_parameters, out.begin());
    std::copy_n(optimizer_state.begin() + split.state_offset, split.in_state,
                out.begin() + split.in_parameters);
  };
}

// `count` floats from `bytes` (a received payload, of any alignment) into elements [offset,
// offset + count) of a state held in two spans; the piece may straddle them and must lie within.
inline void WriteStatePiece(uint64_t offset, const char* bytes, uint64_t count,
                            absl::Span<float> parameters, absl::Span<float> optimizer_state) {
  const StatePieceSplit split = SplitStatePiece(offset, count, parameters.size());
  if (split.in_parameters > 0) {
    std::memcpy(parameters.data() + offset, bytes, split.in_parameters * sizeof(float));
  }
  if (split.in_state > 0) {
    std::memcpy(optimizer_state.data() + split.state_offset,
                bytes + split.in_parameters * sizeof(float), split.in_state * sizeof(float));
  }
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STATE_PIECES_H_
