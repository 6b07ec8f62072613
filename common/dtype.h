// Element types of the tensors Ringside synchronises, as a ring segment's `dtype` names them.
// Sums are always taken in float32; float16 and bfloat16 are only how values travel
// (--wire_dtype, common/wire_dtype.h).
#ifndef RINGSIDE_COMMON_DTYPE_H_
#define RINGSIDE_COMMON_DTYPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace ringside {

enum class DType : uint32_t {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat16 = 2,   // IEEE 754 half
  kBFloat16 = 3,  // bfloat16: float32's upper 16 bits
};

// Bytes per element; 0 for an unknown type (a value read from the network may be anything).
inline size_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    default:
      return 0;
  }
}

inline absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    default:
      return "invalid";
  }
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_DTYPE_H_
