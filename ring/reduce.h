// Element-wise kernels the ring applies to received payloads. Payload bytes are read with
// memcpy-sized loads because received bytes (gRPC slices) have no alignment guarantee; the compiler
// turns these loops into unaligned vector loads. Pure functions; thread-safe.
#ifndef RINGSIDE_RING_REDUCE_H_
#define RINGSIDE_RING_REDUCE_H_

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/wire_dtype.h"

namespace ringside::ring {

// dst[i] += src[i] for `count` float32 values stored at `src_bytes`.
inline void AddFloat32(float* __restrict dst, const char* __restrict src_bytes, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, src_bytes + i * sizeof(float), sizeof(float));
    dst[i] += value;
  }
}

// Applies a payload in pieces to `dst` (count = payload.size() / 4 floats): dst += payload when
// `add`, else dst = payload. A float split across two pieces is reassembled first.
inline void ApplyFloat32Pieces(float* dst, const std::vector<absl::string_view>& pieces, bool add) {
  char carry[sizeof(float)];
  size_t carried = 0;
  auto apply = [add](float* out, const char* bytes, size_t count) {
    if (add) {
      AddFloat32(out, bytes, count);
    } else {
      std::memcpy(out, bytes, count * sizeof(float));
    }
  };
  for (absl::string_view piece : pieces) {
    const char* bytes = piece.data();
    size_t left = piece.size();
    if (carried > 0) {
      const size_t take = std::min(sizeof(float) - carried, left);
      std::memcpy(carry + carried, bytes, take);
      carried += take;
      bytes += take;
      left -= take;
      if (carried < sizeof(float)) continue;
      apply(dst++, carry, 1);
      carried = 0;
    }
    const size_t whole = left / sizeof(float);
    apply(dst, bytes, whole);
    dst += whole;
    carried = left - whole * sizeof(float);
    std::memcpy(carry, bytes + whole * sizeof(float), carried);
  }
}

// The same for elements of any wire dtype (common/wire_dtype.h), decoded to float32: dst +=
// decode(payload) when `add` (a ring hop's reduction, in float32), else dst = decode(payload).
// float32 takes ApplyFloat32Pieces, whose bits every fp32 test pins.
inline void ApplyWirePieces(WireDtype dtype, float* dst,
                            const std::vector<absl::string_view>& pieces, bool add) {
  if (dtype == WireDtype::kFp32) return ApplyFloat32Pieces(dst, pieces, add);
  const size_t width = WireBytesPerElement(dtype);
  auto apply = [dtype, add](float* out, const char* bytes, size_t count) {
    if (add) {
      DecodeAddWire(dtype, bytes, absl::MakeSpan(out, count));
    } else {
      DecodeWire(dtype, bytes, absl::MakeSpan(out, count));
    }
  };
  char carry[sizeof(float)];
  size_t carried = 0;
  for (absl::string_view piece : pieces) {
    const char* bytes = piece.data();
    size_t left = piece.size();
    if (carried > 0) {
      const size_t take = std::min(width - carried, left);
      std::memcpy(carry + carried, bytes, take);
      carried += take;
      bytes += take;
      left -= take;
      if (carried < width) continue;
      apply(dst++, carry, 1);
      carried = 0;
    }
    const size_t whole = left / width;
    apply(dst, bytes, whole);
    dst += whole;
    carried = left - whole * width;
    std::memcpy(carry, bytes + whole * width, carried);
  }
}

inline void ScaleFloat32(float* data, size_t count, float factor) {
  for (size_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_REDUCE_H_
