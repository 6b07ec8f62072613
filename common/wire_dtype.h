// The element types a gradient may travel in (--wire_dtype): float32 as computed, or 16 bits
// (IEEE 754 half, fp16; bfloat16, bf16) to halve the bytes on every link, as Horovod's
// Compression.fp16, DDP's fp16/bf16 compress hooks and BytePS offer.
//
// Encoding rounds to nearest, ties to even (what hardware conversions do); fp16 values beyond
// its range become infinities, and its subnormals are kept. NaN stays NaN (quiet). Sums are
// always taken in float32: a receiver decodes, adds in float32 and, when it forwards the sum,
// encodes again, so each hop rounds once (the ring's partial sums round N-1 times; a shard's
// reply once). A caller that must not overflow fp16 pre-divides (see the sync that uses it).
//
// Pure functions over caller-owned buffers, little-endian on the wire; thread-safe.
#ifndef RINGSIDE_COMMON_WIRE_DTYPE_H_
#define RINGSIDE_COMMON_WIRE_DTYPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ringside {

enum class WireDtype { kFp32, kFp16, kBf16 };

// "fp32", "fp16", "bf16"; anything else is INVALID_ARGUMENT naming the choices.
absl::StatusOr<WireDtype> ParseWireDtype(absl::string_view name);
absl::string_view WireDtypeName(WireDtype dtype);
size_t WireBytesPerElement(WireDtype dtype);

// One element each way.
uint16_t FloatToFp16(float value);
float Fp16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);

// `values` encoded into `wire` (values.size() * WireBytesPerElement bytes).
void EncodeWire(WireDtype dtype, absl::Span<const float> values, char* wire);
// `wire` (out.size() elements) decoded into `out`.
void DecodeWire(WireDtype dtype, const char* wire, absl::Span<float> out);
// `wire` decoded and added to `sum`, in float32: a ring hop's reduction, a shard's sum.
void DecodeAddWire(WireDtype dtype, const char* wire, absl::Span<float> sum);

// How many of `values` are NaN or infinite: a gradient with any is reported, never summed into
// the model silently.
size_t CountNonFinite(absl::Span<const float> values);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_WIRE_DTYPE_H_
