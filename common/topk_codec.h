// Top-k (--compression=topk:F; Deep Gradient Compression, Lin et al. 2018): of each segment of n
// elements, the k = TopKCount(n, F) of largest magnitude travel as values with their indices.
// Only through a parameter server: every worker picks its own indices, so a ring hop could not
// add two payloads without decoding them.
//
// Payload: u32 count (= k) | k × u32 index, strictly increasing, each < n | k × f32 value,
// finite: 4 + 8k bytes. The selection is exact and never a full sort: a threshold estimated
// from a sample of the segment (as Deep Gradient Compression does) gathers the few elements
// above it in one pass (the one that adds error feedback's residual in) and a radix selection
// finds the k-th largest among them (among every element when the estimate gathers fewer than
// k); of equal magnitudes at the threshold the lowest indices are taken, so the choice is
// deterministic.
//
// Thread-safe (const after construction); errors as GradientCodec says.
#ifndef RINGSIDE_COMMON_TOPK_CODEC_H_
#define RINGSIDE_COMMON_TOPK_CODEC_H_

#include <cstddef>
#include <memory>

#include "common/gradient_codec.h"

namespace ringside {

// k for a segment of `elements`: ceil(fraction · elements) (F as written: its float's rounding
// never adds one), at least 1 and at most `elements` (0 for an empty segment). `fraction` in
// (0, 1].
size_t TopKCount(size_t elements, float fraction);

// How many elements of a segment of `elements` the estimate of its k-th largest magnitude is
// drawn from (k in [1, elements]): element j · (elements / size) for j < size, when 4 · size <
// elements (else the selection runs over every element).
size_t TopKSampleSize(size_t elements, size_t k);

// The topk codec (SegmentCodec over this file's encoding).
std::unique_ptr<GradientCodec> MakeTopKCodec(float fraction);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_TOPK_CODEC_H_
