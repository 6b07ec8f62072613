// Element-wise kernels the ring applies to received payloads. Payload bytes are read with
// memcpy-sized loads because a received std::string gives no alignment guarantee; the compiler
// turns these loops into unaligned vector loads. Pure functions; thread-safe.
#ifndef RINGSIDE_RING_REDUCE_H_
#define RINGSIDE_RING_REDUCE_H_

#include <cstddef>
#include <cstring>

namespace ringside::ring {

// dst[i] += src[i] for `count` float32 values stored at `src_bytes`.
inline void AddFloat32(float* __restrict dst, const char* __restrict src_bytes, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, src_bytes + i * sizeof(float), sizeof(float));
    dst[i] += value;
  }
}

inline void ScaleFloat32(float* data, size_t count, float factor) {
  for (size_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_REDUCE_H_
