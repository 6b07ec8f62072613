// A top-k payload written by hand (common/topk_codec.h's format: u32 count, the indices, the
// values), well formed or not, for the tests of its decoders.
#ifndef RINGSIDE_TESTS_SUPPORT_TOPK_PAYLOAD_H_
#define RINGSIDE_TESTS_SUPPORT_TOPK_PAYLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/gradient_codec.h"

namespace ringside::testing {

// `count` as the payload's count, then `indices` and `values` as given (any lengths).
inline std::string TopKPayload(uint32_t count, const std::vector<uint32_t>& indices,
                               const std::vector<float>& values) {
  std::string wire(4 + 4 * indices.size() + 4 * values.size(), '\0');
  StoreU32(wire.data(), count);
  for (size_t j = 0; j < indices.size(); ++j) StoreU32(wire.data() + 4 + 4 * j, indices[j]);
  for (size_t j = 0; j < values.size(); ++j) {
    StoreF32(wire.data() + 4 + 4 * indices.size() + 4 * j, values[j]);
  }
  return wire;
}

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_TOPK_PAYLOAD_H_
