// A gradient compressor (--compression, common/compression.h): one segment of float32 gradient
// into far fewer bytes, and back. One interface, one class over it (SegmentCodec below), one
// encoding per kind, each in its own file (topk_codec.h, sign_codec.h, randomk_codec.h: the
// payload and the five operations); the error feedback that makes them
// converge (error_feedback.h) is a policy beside them, not in each codec.
//
// Encode is lossy and says exactly what it lost: it leaves in its input what the wire does not
// carry (values − Decode(wire)), so the caller's residual is updated in the same pass. A segment
// is whatever the caller hands over (a PS push segment, a ring chunk's segment); EncodedBytes is
// a pure function of its element count, so the cost model knows every link's bytes exactly.
//
// Decoding checks every field before it writes anything (a payload from the network may be
// anything): its size, counts, index range and order, and that every value is finite. A bad
// payload is INVALID_ARGUMENT naming what is wrong, and the output is left untouched.
//
// Little-endian on the wire. Implementations hold only their configuration: const, thread-safe.
#ifndef RINGSIDE_COMMON_GRADIENT_CODEC_H_
#define RINGSIDE_COMMON_GRADIENT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ringside {

// Which segment of which step a payload is: what a codec whose coordinates are drawn rather
// than sent (random-k) derives them from, so every worker and shard draws the same.
struct SegmentKey {
  uint64_t seed = 0;    // the job's --seed
  int64_t step = 0;     // the training step
  uint64_t offset = 0;  // the segment's first element in the whole gradient
};

class GradientCodec {
 public:
  virtual ~GradientCodec() = default;

  // The exact payload bytes of a segment of `elements` elements.
  virtual size_t EncodedBytes(size_t elements) const = 0;

  // Writes EncodedBytes(values.size()) bytes of `values` into `wire` and leaves in `values`
  // what the wire does not carry: each value minus what Decode gives back for it. `values`
  // must be finite (the caller counts non-finite values first, as every sync does).
  virtual void Encode(const SegmentKey& key, absl::Span<float> values, char* wire) const = 0;

  // Adds `gradient` into `residual` (of one length) and encodes the sum: exactly the wire and
  // the residual that AddInto and then Encode leave, in fewer passes over the segment where the
  // kind can fold the add into its own first pass (top-k's gather, sign's scale). What error
  // feedback calls; the same preconditions as Encode.
  virtual void EncodeAdded(const SegmentKey& key, absl::Span<const float> gradient,
                           absl::Span<float> residual, char* wire) const = 0;

  // Whether `wire` is a well-formed payload of `elements` elements for `key`: OK, or
  // INVALID_ARGUMENT naming the first thing wrong.
  virtual absl::Status Check(const SegmentKey& key, absl::string_view wire,
                             size_t elements) const = 0;

  // `wire` decoded and added to `sum` in float32 (a shard's sum of pushes), after Check: on
  // error `sum` is unchanged.
  absl::Status DecodeAdd(const SegmentKey& key, absl::string_view wire,
                         absl::Span<float> sum) const;
  // `wire` decoded into `out` (a worker's reply), after Check: on error `out` is unchanged.
  absl::Status Decode(const SegmentKey& key, absl::string_view wire, absl::Span<float> out) const;

 protected:
  // DecodeAdd once Check has passed.
  virtual void AddChecked(const SegmentKey& key, absl::string_view wire,
                          absl::Span<float> sum) const = 0;
};

// The one codec class: GradientCodec over an encoding, a value type holding the kind's
// configuration with its five operations, defined in the kind's .cc (each kind's header declares
// only its Make...Codec; the payload formats are written there):
//   size_t EncodedBytes(size_t elements) const;
//   void Encode(const SegmentKey&, absl::Span<float> values, char* wire) const;
//   void EncodeAdded(const SegmentKey&, absl::Span<const float> gradient,
//                    absl::Span<float> residual, char* wire) const;
//   absl::Status Check(const SegmentKey&, absl::string_view wire, size_t elements) const;
//   void AddChecked(const SegmentKey&, absl::string_view wire, absl::Span<float> sum) const;
// The constructor's arguments initialise the encoding (its fraction, or none).
template <typename Encoding>
class SegmentCodec final : public GradientCodec {
 public:
  template <typename... Config>
  explicit SegmentCodec(Config... config) : encoding_{config...} {}

  size_t EncodedBytes(size_t elements) const override { return encoding_.EncodedBytes(elements); }
  void Encode(const SegmentKey& key, absl::Span<float> values, char* wire) const override {
    encoding_.Encode(key, values, wire);
  }
  void EncodeAdded(const SegmentKey& key, absl::Span<const float> gradient,
                   absl::Span<float> residual, char* wire) const override {
    encoding_.EncodeAdded(key, gradient, residual, wire);
  }
  absl::Status Check(const SegmentKey& key, absl::string_view wire,
                     size_t elements) const override {
    return encoding_.Check(key, wire, elements);
  }

 protected:
  void AddChecked(const SegmentKey& key, absl::string_view wire,
                  absl::Span<float> sum) const override {
    encoding_.AddChecked(key, wire, sum);
  }

 private:
  const Encoding encoding_;
};

// residual[i] += gradient[i] over two spans of one length: error feedback's add, a pass of its
// own for the kinds that cannot fold it into theirs. Raw pointers: Debian's Abseil is built
// hardened, so every Span::operator[] checks its bound, and a checked loop is not vectorised.
inline void AddInto(absl::Span<const float> gradient, absl::Span<float> residual) {
  float* out = residual.data();
  const float* added = gradient.data();
  for (size_t i = 0; i < gradient.size(); ++i) out[i] += added[i];
}

// Little-endian loads and stores the codecs' payloads are made of. Inline: the decoders call
// them once an element, and inlined the byte shifts compile to one move.
inline void StoreU32(char* wire, uint32_t value) {
  auto* bytes = reinterpret_cast<unsigned char*>(wire);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
}

inline uint32_t LoadU32(const char* wire) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(wire);
  return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 |
         uint32_t{bytes[3]} << 24;
}

inline void StoreF32(char* wire, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  StoreU32(wire, bits);
}

inline float LoadF32(const char* wire) {
  const uint32_t bits = LoadU32(wire);
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_GRADIENT_CODEC_H_
