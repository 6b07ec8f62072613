// Element-wise kernels the ring applies to its buffers (a received payload itself is decoded, or
// added, by common/wire_dtype.h's WirePiecesReader). Pure functions; thread-safe.
#ifndef RINGSIDE_RING_REDUCE_H_
#define RINGSIDE_RING_REDUCE_H_

#include <cstddef>

namespace ringside::ring {

inline void ScaleFloat32(float* data, size_t count, float factor) {
  for (size_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_REDUCE_H_
