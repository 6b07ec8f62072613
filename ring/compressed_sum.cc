#include "ring/compressed_sum.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/cost_model.h"
#include "common/status_macros.h"

namespace ringside::ring {

uint64_t CompactElements(const Compression& compression, uint64_t elements) {
  const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(compression);
  if (codec == nullptr) return elements;
  // A summable codec's payload is its values, four bytes each.
  return CompressedLinkBytes(*codec, SegmentLengths(elements, kCompressionBlockElements)) / 4;
}

CodecRingSum::CodecRingSum(const Compression& compression, int64_t warmup_steps, uint64_t seed,
                           uint64_t elements)
    : compression_(compression),
      warmup_steps_(warmup_steps),
      seed_(seed),
      codec_(MakeGradientCodec(compression)),
      feedback_(codec_ == nullptr ? 0 : elements),
      compact_(CompactElements(compression, elements)) {}

absl::Status CodecRingSum::Sum(int64_t step, absl::Span<float> gradient, StepAllreduce allreduce) {
  if (!CompressesStep(compression_, warmup_steps_, step)) return allreduce(0, gradient);
  RETURN_IF_ERROR(CheckCompressionFitsMode(compression_, SyncMode::kRing));
  if (codec_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--compression=", CompressionText(compression_),
                                                   " has no segment codec to sum"));
  }
  if (gradient.size() != feedback_.size()) {
    return absl::InternalError(absl::StrCat("a compressed ring step of ", gradient.size(),
                                            " elements; the residual holds ", feedback_.size()));
  }
  std::string wire;
  size_t filled = 0;
  for (uint64_t at = 0; at < gradient.size(); at += kCompressionBlockElements) {
    const size_t n = std::min<uint64_t>(kCompressionBlockElements, gradient.size() - at);
    wire.resize(codec_->EncodedBytes(n));
    feedback_.Encode(*codec_, SegmentKey{seed_, step, at}, at, gradient.subspan(at, n),
                     wire.data());
    for (size_t j = 0; j < wire.size() / 4; ++j) compact_[filled++] = LoadF32(wire.data() + 4 * j);
  }
  RETURN_IF_ERROR(allreduce(0, absl::MakeSpan(compact_)));
  filled = 0;
  for (uint64_t at = 0; at < gradient.size(); at += kCompressionBlockElements) {
    const size_t n = std::min<uint64_t>(kCompressionBlockElements, gradient.size() - at);
    wire.resize(codec_->EncodedBytes(n));
    for (size_t j = 0; j < wire.size() / 4; ++j) StoreF32(wire.data() + 4 * j, compact_[filled++]);
    // A sum that overflowed to infinity is refused here, never handed to the optimiser.
    RETURN_IF_ERROR(codec_->Decode(SegmentKey{seed_, step, at}, wire, gradient.subspan(at, n)));
  }
  return absl::OkStatus();
}

}  // namespace ringside::ring
