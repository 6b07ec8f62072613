// A 64-bit FNV-1a digest of raw bytes, printed as 16 hex digits: cheap evidence that two
// processes hold bit-identical buffers (parameters, allreduce results) without shipping them.
#ifndef RINGSIDE_COMMON_CHECKSUM_H_
#define RINGSIDE_COMMON_CHECKSUM_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"

namespace ringside {

inline std::string Fnv1aHex(absl::Span<const float> values) {
  uint64_t hash = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_CHECKSUM_H_
