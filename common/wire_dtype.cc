#include "common/wire_dtype.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace ringside {
namespace {

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FloatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t Load16(const char* wire, size_t i) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(wire) + 2 * i;
  return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));
}

void Store16(char* wire, size_t i, uint16_t bits) {
  auto* bytes = reinterpret_cast<unsigned char*>(wire) + 2 * i;
  bytes[0] = static_cast<unsigned char>(bits & 0xff);
  bytes[1] = static_cast<unsigned char>(bits >> 8);
}

// `magnitude` (a float's bits without the sign) shifted right by `shift` bits, rounded to
// nearest with ties to even.
uint32_t ShiftRoundingToEven(uint32_t magnitude, int shift) {
  if (shift >= 32) return 0;
  const uint32_t kept = magnitude >> shift;
  const uint32_t dropped = magnitude & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  return kept + ((dropped > half || (dropped == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

absl::StatusOr<WireDtype> ParseWireDtype(absl::string_view name) {
  if (name == "fp32") return WireDtype::kFp32;
  if (name == "fp16") return WireDtype::kFp16;
  if (name == "bf16") return WireDtype::kBf16;
  return absl::InvalidArgumentError("the wire dtype must be fp32, fp16 or bf16");
}

absl::string_view WireDtypeName(WireDtype dtype) {
  switch (dtype) {
    case WireDtype::kFp16:
      return "fp16";
    case WireDtype::kBf16:
      return "bf16";
    case WireDtype::kFp32:
      break;
  }
  return "fp32";
}

size_t WireBytesPerElement(WireDtype dtype) { return dtype == WireDtype::kFp32 ? 4 : 2; }

uint16_t FloatToFp16(float value) {
  const uint32_t bits = BitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) {  // infinity, or NaN (kept quiet, never turned into infinity)
    return sign | (magnitude > 0x7f800000 ? 0x7e00 : 0x7c00);
  }
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= 16) return sign | 0x7c00;  // beyond the largest finite half: infinity
  if (exponent >= -14) {
    // Normal: rebias the exponent and round the mantissa from 23 to 10 bits; a carry out of
    // the mantissa correctly bumps the exponent, up to infinity (0x7c00).
    const uint32_t rebased = magnitude - ((127 - 15) << 23);
    return sign | static_cast<uint16_t>(ShiftRoundingToEven(rebased, 13));
  }
  // Subnormal half (or zero): the value in units of 2^-24, with the implicit leading one.
  const uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
  const int shift = 13 + (-14 - exponent);  // 24 - 1 - 10 + extra
  return sign | static_cast<uint16_t>(ShiftRoundingToEven(mantissa, shift));
}

float Fp16ToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1f;
  const uint32_t mantissa = half & 0x3ff;
  if (exponent == 0x1f) return FloatOf(sign | 0x7f800000 | (mantissa << 13));
  if (exponent != 0) return FloatOf(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float32.
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

uint16_t FloatToBf16(float value) {
  const uint32_t bits = BitsOf(value);
  if ((bits & 0x7fffffff) > 0x7f800000) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040);  // NaN stays NaN, quiet
  }
  // Round the low 16 bits away, ties to even; a carry may reach infinity, as it should.
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t bits) { return FloatOf(static_cast<uint32_t>(bits) << 16); }

void EncodeWire(WireDtype dtype, absl::Span<const float> values, char* wire) {
  switch (dtype) {
    case WireDtype::kFp32:
      std::memcpy(wire, values.data(), values.size() * sizeof(float));
      return;
    case WireDtype::kFp16:
      for (size_t i = 0; i < values.size(); ++i) Store16(wire, i, FloatToFp16(values[i]));
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < values.size(); ++i) Store16(wire, i, FloatToBf16(values[i]));
      return;
  }
}

void DecodeWire(WireDtype dtype, const char* wire, absl::Span<float> out) {
  switch (dtype) {
    case WireDtype::kFp32:
      std::memcpy(out.data(), wire, out.size() * sizeof(float));
      return;
    case WireDtype::kFp16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = Fp16ToFloat(Load16(wire, i));
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = Bf16ToFloat(Load16(wire, i));
      return;
  }
}

void DecodeAddWire(WireDtype dtype, const char* wire, absl::Span<float> sum) {
  switch (dtype) {
    case WireDtype::kFp32: {
      // Restricted: the received bytes never alias the sum, so the loop vectorises unchecked.
      float* __restrict out = sum.data();
      const char* __restrict in = wire;
      for (size_t i = 0; i < sum.size(); ++i) {
        float value;
        std::memcpy(&value, in + 4 * i, sizeof(value));
        out[i] += value;
      }
      return;
    }
    case WireDtype::kFp16:
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += Fp16ToFloat(Load16(wire, i));
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += Bf16ToFloat(Load16(wire, i));
      return;
  }
}

void DecodeAddEncodeWire(WireDtype dtype, const char* wire, absl::Span<const float> addend,
                         char* out) {
  switch (dtype) {
    case WireDtype::kFp32: {
      // One pass, nothing in between: the three buffers never alias, so it vectorises.
      const float* __restrict own = addend.data();
      const char* __restrict in = wire;
      char* __restrict sum = out;
      for (size_t i = 0; i < addend.size(); ++i) {
        float value;
        std::memcpy(&value, in + 4 * i, sizeof(value));
        value += own[i];
        std::memcpy(sum + 4 * i, &value, sizeof(value));
      }
      return;
    }
    case WireDtype::kFp16:
      for (size_t i = 0; i < addend.size(); ++i) {
        Store16(out, i, FloatToFp16(addend[i] + Fp16ToFloat(Load16(wire, i))));
      }
      return;
    case WireDtype::kBf16:
      for (size_t i = 0; i < addend.size(); ++i) {
        Store16(out, i, FloatToBf16(addend[i] + Bf16ToFloat(Load16(wire, i))));
      }
      return;
  }
}

template <typename Apply>
bool WirePiecesReader::Walk(size_t count, Apply apply) {
  size_t done = 0;
  while (done < count) {
    if (piece_ == pieces_.size()) return false;
    const absl::string_view rest = pieces_[piece_].substr(at_);
    const size_t whole = std::min(rest.size() / width_, count - done);
    if (whole > 0) {
      apply(rest.data(), done, whole);
      done += whole;
      at_ += whole * width_;
      if (at_ == pieces_[piece_].size()) ++piece_, at_ = 0;
      continue;
    }
    char element[sizeof(float)];
    if (!ReadStraddling(element)) return false;
    apply(element, done, 1);
    ++done;
  }
  return true;
}

bool WirePiecesReader::Read(absl::Span<float> out, bool add) {
  return Walk(out.size(), [&](const char* wire, size_t at, size_t count) {
    const absl::Span<float> part = out.subspan(at, count);
    add ? DecodeAddWire(dtype_, wire, part) : DecodeWire(dtype_, wire, part);
  });
}

bool WirePiecesReader::ReadSumEncoded(absl::Span<const float> addend, char* out) {
  return Walk(addend.size(), [&](const char* wire, size_t at, size_t count) {
    DecodeAddEncodeWire(dtype_, wire, addend.subspan(at, count), out + at * width_);
  });
}

bool WirePiecesReader::Skip(size_t elements) {
  size_t bytes = elements * width_;
  while (bytes > 0) {
    if (piece_ == pieces_.size()) return false;
    const size_t take = std::min(bytes, pieces_[piece_].size() - at_);
    bytes -= take;
    at_ += take;
    if (at_ == pieces_[piece_].size()) ++piece_, at_ = 0;
  }
  return true;
}

bool WirePiecesReader::ReadStraddling(char* element) {
  size_t got = 0;
  while (got < width_) {
    if (piece_ == pieces_.size()) return false;
    const absl::string_view rest = pieces_[piece_].substr(at_);
    const size_t take = std::min(width_ - got, rest.size());
    std::memcpy(element + got, rest.data(), take);
    got += take;
    at_ += take;
    if (at_ == pieces_[piece_].size()) ++piece_, at_ = 0;
  }
  return true;
}

absl::StatusOr<WireDtype> WireDtypeOfNumber(uint32_t number) {
  switch (number) {
    case WireDtypeNumber(WireDtype::kFp32):
      return WireDtype::kFp32;
    case WireDtypeNumber(WireDtype::kFp16):
      return WireDtype::kFp16;
    case WireDtypeNumber(WireDtype::kBf16):
      return WireDtype::kBf16;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("element type ", number, " is not float32, float16 or bfloat16"));
}

size_t ElementSizeOfNumber(uint32_t number) {
  switch (number) {
    case WireDtypeNumber(WireDtype::kFp32):
      return 4;
    case WireDtypeNumber(WireDtype::kFp16):
    case WireDtypeNumber(WireDtype::kBf16):
      return 2;
    default:
      return 0;
  }
}

absl::string_view WireDtypeNumberName(uint32_t number) {
  switch (number) {
    case WireDtypeNumber(WireDtype::kFp32):
      return "float32";
    case WireDtypeNumber(WireDtype::kFp16):
      return "float16";
    case WireDtypeNumber(WireDtype::kBf16):
      return "bfloat16";
    default:
      return "invalid";
  }
}

float WireShareDivisor(WireDtype dtype, int workers) {
  return dtype == WireDtype::kFp16 && workers > 1 ? static_cast<float>(workers) : 1.0f;
}

void DivideShare(absl::Span<float> values, float divisor) {
  if (divisor == 1.0f) return;
  for (float& value : values) value /= divisor;
}

void MultiplySum(absl::Span<float> values, float multiplier) {
  if (multiplier == 1.0f) return;
  for (float& value : values) value *= multiplier;
}

void RoundToWire(WireDtype dtype, absl::Span<float> values) {
  switch (dtype) {
    case WireDtype::kFp16:
      for (float& value : values) value = Fp16ToFloat(FloatToFp16(value));
      return;
    case WireDtype::kBf16:
      for (float& value : values) value = Bf16ToFloat(FloatToBf16(value));
      return;
    case WireDtype::kFp32:
      return;
  }
}

double RelativeL2Error(absl::Span<const float> got, absl::Span<const float> exact) {
  assert(got.size() == exact.size());
  double error = 0, norm = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double difference = static_cast<double>(got[i]) - exact[i];
    error += difference * difference;
    norm += static_cast<double>(exact[i]) * exact[i];
  }
  if (error == 0) return 0;
  if (norm == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(error / norm);
}

size_t CountNonFinite(absl::Span<const float> values) {
  size_t count = 0;
  for (const float value : values) count += std::isfinite(value) ? 0 : 1;
  return count;
}

}  // namespace ringside
