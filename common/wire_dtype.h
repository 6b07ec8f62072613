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
#include <vector>

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
// `wire` (addend.size() elements) decoded, added to `addend` in float32 and the sums encoded
// into `out`, in one pass: a ring hop that forwards a partial sum it does not keep.
void DecodeAddEncodeWire(WireDtype dtype, const char* wire, absl::Span<const float> addend,
                         char* out);

// Elements of `dtype` read front to back from a payload in pieces (the slices gRPC received it
// in: a piece may end in the middle of an element, which is then reassembled), decoded into
// float32 as DecodeWire and DecodeAddWire do. Holds a reference to `pieces`.
class WirePiecesReader {
 public:
  WirePiecesReader(WireDtype dtype, const std::vector<absl::string_view>& pieces)
      : dtype_(dtype), width_(WireBytesPerElement(dtype)), pieces_(pieces) {}
  // The next out.size() elements into `out` (added to it when `add`); false, with `out` partly
  // written, when the pieces hold fewer.
  bool Read(absl::Span<float> out, bool add);
  // The next addend.size() elements, each added to `addend`'s in float32, encoded into `out`
  // (addend.size() * WireBytesPerElement bytes) as DecodeAddEncodeWire does; false, with `out`
  // partly written, when the pieces hold fewer.
  bool ReadSumEncoded(absl::Span<const float> addend, char* out);
  // Passes over the next `elements` elements; false when the pieces hold fewer.
  bool Skip(size_t elements);

 private:
  // Calls apply(wire, at, n) for the next `count` elements in order, `n` of them from `wire`
  // starting at element `at` of the read (a run within one piece, or one element that straddles
  // pieces, reassembled); false when the pieces hold fewer.
  template <typename Apply>
  bool Walk(size_t count, Apply apply);
  // One element that straddles pieces, gathered into `element`; false when the pieces end.
  bool ReadStraddling(char* element);

  const WireDtype dtype_;
  const size_t width_;
  const std::vector<absl::string_view>& pieces_;
  size_t piece_ = 0;  // where the next element starts: pieces_[piece_], byte at_
  size_t at_ = 0;
};

// The number a message's `dtype` field carries for values in `dtype` (RingSegment.dtype,
// PsPush.dtype, PsRangeValues.dtype): 1 float32, 2 float16, 3 bfloat16. Fixed by the wire
// format (proto/ring.proto, proto/ps.proto); 0, kNoWireDtypeNumber, names no type.
inline constexpr uint32_t kNoWireDtypeNumber = 0;
constexpr uint32_t WireDtypeNumber(WireDtype dtype) {
  switch (dtype) {
    case WireDtype::kFp16:
      return 2;
    case WireDtype::kBf16:
      return 3;
    case WireDtype::kFp32:
      break;
  }
  return 1;
}
// And back: INVALID_ARGUMENT for a number that names no wire dtype (kNoWireDtypeNumber, or a
// value read from the network that names none).
absl::StatusOr<WireDtype> WireDtypeOfNumber(uint32_t number);
// Bytes per element of the type `number` names; 0 when it names none (a value read from the
// network may be anything).
size_t ElementSizeOfNumber(uint32_t number);
// "float32", "float16", "bfloat16"; "invalid" when `number` names no type.
absl::string_view WireDtypeNumberName(uint32_t number);

// The guard against fp16 overflow (fp16's largest finite value is 65504): with N workers each
// share is divided by N before it is encoded and the decoded sum multiplied by N again (as
// DDP's fp16 compress hook divides by the world size), so every value on the wire, partial sums
// included, is at most the largest share's magnitude. N for fp16; 1 for fp32 and bf16, which
// have float32's range (and so no extra rounding, nor any change to fp32's bits).
float WireShareDivisor(WireDtype dtype, int workers);
// values[i] /= divisor, and values[i] *= multiplier: nothing when the factor is 1.
void DivideShare(absl::Span<float> values, float divisor);
void MultiplySum(absl::Span<float> values, float multiplier);

// Rounds `values` in place to what `dtype` carries (decode(encode(v))); nothing for fp32. A
// rank that keeps a value it also sends rounds its own copy, so it holds what the others decode.
void RoundToWire(WireDtype dtype, absl::Span<float> values);

// ||got - exact||_2 / ||exact||_2 in double (0 when both are zero; infinity when only `exact`
// is). The sizes must agree (a broken invariant otherwise).
double RelativeL2Error(absl::Span<const float> got, absl::Span<const float> exact);

// How many of `values` are NaN or infinite: a gradient with any is reported, never summed into
// the model silently.
size_t CountNonFinite(absl::Span<const float> values);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_WIRE_DTYPE_H_
