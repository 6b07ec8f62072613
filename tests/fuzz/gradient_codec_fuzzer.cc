// Fuzzes the gradient codecs' decoders (common/gradient_codec.h: top-k, sign, random-k), which
// read what any worker or shard sends. Input (fuzz_input.h's reader): kind byte, fraction byte,
// u16 elements, u8 step, u16 offset; the rest is the payload. Invariants:
// - Check refuses with INVALID_ARGUMENT or accepts; a refused payload leaves the sum untouched
//   (bit for bit), an accepted one changes it only where the kind may (top-k: at most k
//   elements; random-k: only the key's coordinates; sign: every element by exactly ±scale) and
//   only to finite values;
// - the same bytes read as float32 values (non-finite ones zeroed) and encoded: the payload is
//   EncodedBytes long, accepted, and decodes to what the encoder said it sent (the input less
//   what it left behind), and encoded with the reversed input added in (EncodeAdded, error
//   feedback's call) gives the very payload and residual of AddInto and then Encode.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/compression.h"
#include "common/gradient_codec.h"
#include "common/randomk_codec.h"
#include "common/topk_codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

struct Setup {
  Compression compression;
  size_t elements = 0;
  SegmentKey key;
};

Setup ReadSetup(FuzzReader& in) {
  Setup setup;
  const uint8_t kind = in.Byte() % 3;
  const float fraction = static_cast<float>(in.Byte() % 255 + 1) / 255.0f;
  setup.compression = kind == codec_kinds::kTopK ? Compression{CompressionKind::kTopK, fraction}
                      : kind == codec_kinds::kSign
                          ? Compression{CompressionKind::kSign, 1}
                          : Compression{CompressionKind::kRandomK, fraction};
  setup.elements = in.Uint(2) % 4097;
  setup.key.seed = 1;
  setup.key.step = in.Byte();
  setup.key.offset = in.Uint(2);
  return setup;
}

float Pattern(size_t i) { return static_cast<float>(i % 7) - 3.0f; }

void CheckDecode(const Setup& setup, const GradientCodec& codec, const std::string& payload) {
  const size_t n = setup.elements;
  std::vector<float> sum(n);
  for (size_t i = 0; i < n; ++i) sum[i] = Pattern(i);
  const std::vector<float> before = sum;
  const absl::Status status = codec.DecodeAdd(setup.key, payload, absl::MakeSpan(sum));
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument, "%s",
               status.ToString().c_str());
    FUZZ_CHECK(n == 0 || std::memcmp(sum.data(), before.data(), n * sizeof(float)) == 0,
               "a refused payload changed the sum");
    return;
  }
  FUZZ_CHECK(payload.size() == codec.EncodedBytes(n), "accepted %zu bytes, not %zu", payload.size(),
             codec.EncodedBytes(n));
  size_t changed = 0;
  for (size_t i = 0; i < n; ++i) {
    FUZZ_CHECK(std::isfinite(sum[i]), "element %zu decoded to a non-finite value", i);
    changed += sum[i] != before[i] ? 1 : 0;
  }
  const float fraction = setup.compression.fraction;
  switch (setup.compression.kind) {
    case CompressionKind::kTopK:
      FUZZ_CHECK(changed <= TopKCount(n, fraction), "top-k changed %zu elements", changed);
      break;
    case CompressionKind::kRandomK: {
      std::vector<bool> drawn(n, false);
      for (const uint32_t i : RandomKCoordinates(setup.key, n, TopKCount(n, fraction))) {
        drawn[i] = true;
      }
      for (size_t i = 0; i < n; ++i) {
        FUZZ_CHECK(drawn[i] || sum[i] == before[i], "random-k changed undrawn element %zu", i);
      }
      break;
    }
    case CompressionKind::kSign: {
      const float scale = LoadF32(payload.data());
      std::vector<float> decoded(n);
      FUZZ_CHECK(codec.Decode(setup.key, payload, absl::MakeSpan(decoded)).ok(), "Decode");
      for (size_t i = 0; i < n; ++i) {
        FUZZ_CHECK(decoded[i] == scale || decoded[i] == -scale, "sign element %zu is %g", i,
                   decoded[i]);
      }
      break;
    }
    case CompressionKind::kPowerSgd:  // no segment codec: never drawn here
    case CompressionKind::kNone:
      break;
  }
}

void CheckEncode(const Setup& setup, const GradientCodec& codec, const std::string& bytes) {
  const size_t n = setup.elements;
  std::vector<float> values(n, 0.0f);
  for (size_t i = 0; i < n && 4 * i + 4 <= bytes.size(); ++i) {
    const float value = LoadF32(bytes.data() + 4 * i);
    // Finite, and small enough that a sign scale (a mean of magnitudes) is finite too.
    values[i] = std::isfinite(value) && std::fabs(value) < 1e30f ? value : 0.0f;
  }
  const std::vector<float> original = values;
  std::string wire(codec.EncodedBytes(n), '\0');
  codec.Encode(setup.key, absl::MakeSpan(values), wire.data());
  // The add folded into the pass (error feedback's call) is the add and then the encode: the
  // input reversed added into it, both ways.
  const std::vector<float> gradient(original.rbegin(), original.rend());
  std::vector<float> added = original, folded = original;
  AddInto(gradient, absl::MakeSpan(added));
  std::string added_wire(codec.EncodedBytes(n), '\0'), folded_wire(codec.EncodedBytes(n), '\0');
  codec.Encode(setup.key, absl::MakeSpan(added), added_wire.data());
  codec.EncodeAdded(setup.key, gradient, absl::MakeSpan(folded), folded_wire.data());
  FUZZ_CHECK(folded_wire == added_wire, "EncodeAdded's payload differs from AddInto + Encode's");
  FUZZ_CHECK(n == 0 || std::memcmp(folded.data(), added.data(), n * sizeof(float)) == 0,
             "EncodeAdded's residual differs from AddInto + Encode's");
  std::vector<float> decoded(n);
  const absl::Status status = codec.Decode(setup.key, wire, absl::MakeSpan(decoded));
  FUZZ_CHECK(status.ok(), "its own encoding refused: %s", status.ToString().c_str());
  for (size_t i = 0; i < n; ++i) {
    // What was sent is the input less what was left: exact for the kinds that send values
    // whole; within the subtraction's rounding for sign.
    const float sent = original[i] - values[i];
    const bool sign = setup.compression.kind == CompressionKind::kSign;
    const float slack = sign ? 1e-6f * (std::fabs(original[i]) + std::fabs(decoded[i])) : 0.0f;
    FUZZ_CHECK(std::fabs(sent - decoded[i]) <= slack, "element %zu: sent %g, decoded %g", i, sent,
               decoded[i]);
  }
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside::fuzz;  // NOLINT: the target's own namespace
  FuzzReader in(data, size);
  const Setup setup = ReadSetup(in);
  const std::unique_ptr<ringside::GradientCodec> codec =
      ringside::MakeGradientCodec(setup.compression);
  const std::string payload = in.Rest();
  CheckDecode(setup, *codec, payload);
  CheckEncode(setup, *codec, payload);
  return 0;
}
