// Element types of the tensors Ringside synchronises. Only float32 is reduced today; the enum and
// ElementSize() are where float16/bfloat16 join (a reduce kernel per type in ring/reduce.h).
#ifndef RINGSIDE_COMMON_DTYPE_H_
#define RINGSIDE_COMMON_DTYPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace ringside {

enum class DType : uint32_t {
  kInvalid = 0,
  kFloat32 = 1,
};

// Bytes per element; 0 for an unknown type (a value read from the network may be anything).
inline size_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    default:
      return 0;
  }
}

inline absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    default:
      return "invalid";
  }
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_DTYPE_H_
