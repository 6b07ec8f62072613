// Random-k (--compression=randomk:F; Stich et al. 2018, with error feedback): of each segment of
// n elements, the values of k = TopKCount(n, F) coordinates travel, the coordinates themselves
// drawn from the segment's key (the job's seed, the step, the segment's offset) and never sent.
// Every worker draws the same coordinates for the same segment, so two payloads of one key add
// value by value: a ring hop sums what it receives into its own k values and forwards k values,
// and the sum decodes as any one payload does.
//
// Payload: k × f32 value, finite, in the order of the coordinates (ascending): 4k bytes. The
// coordinates are one index drawn in each of k strata of the segment (consecutive runs of
// floor(n/k) or ceil(n/k) elements) by the counter RNG (common/counter_rng.h, stream
// kRandomKCoordinates), so every process draws the same ones, each element about k/n of the
// time.
//
// Thread-safe (const after construction); errors as GradientCodec says.
#ifndef RINGSIDE_COMMON_RANDOMK_CODEC_H_
#define RINGSIDE_COMMON_RANDOMK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/gradient_codec.h"

namespace ringside {

// The k distinct coordinates in [0, elements) of segment `key`, ascending (k <= elements).
std::vector<uint32_t> RandomKCoordinates(const SegmentKey& key, size_t elements, size_t k);

// The randomk codec (SegmentCodec over this file's encoding).
std::unique_ptr<GradientCodec> MakeRandomKCodec(float fraction);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_RANDOMK_CODEC_H_
