#include "common/gradient_codec.h"

#include <algorithm>
#include <cstring>

#include "common/status_macros.h"

namespace ringside {

absl::Status GradientCodec::DecodeAdd(const SegmentKey& key, absl::string_view wire,
                                      absl::Span<float> sum) const {
  RETURN_IF_ERROR(Check(key, wire, sum.size()));
  AddChecked(key, wire, sum);
  return absl::OkStatus();
}

absl::Status GradientCodec::Decode(const SegmentKey& key, absl::string_view wire,
                                   absl::Span<float> out) const {
  RETURN_IF_ERROR(Check(key, wire, out.size()));
  std::fill(out.begin(), out.end(), 0.0f);
  AddChecked(key, wire, out);
  return absl::OkStatus();
}

void StoreU32(char* wire, uint32_t value) {
  auto* bytes = reinterpret_cast<unsigned char*>(wire);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint32_t LoadU32(const char* wire) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(wire);
  return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 |
         uint32_t{bytes[3]} << 24;
}

void StoreF32(char* wire, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  StoreU32(wire, bits);
}

float LoadF32(const char* wire) {
  const uint32_t bits = LoadU32(wire);
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace ringside
