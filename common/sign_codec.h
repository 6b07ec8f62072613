// Sign with a scale (--compression=sign; 1-bit SGD, Seide et al. 2014; the compression of
// DeepSpeed's 1-bit Adam): each element travels as one bit, its sign, and each segment as one
// scale, the mean magnitude of its elements; element i decodes to +scale or −scale. Only through
// a parameter server: the scales differ per worker, so a hop could not add two payloads.
//
// Payload: f32 scale (finite, >= 0) | ceil(n / 8) bytes, element i in bit i % 8 (least
// significant first) of byte i / 8, 1 for a value >= 0, 0 for a negative one; the unused bits
// of the last byte are 0. 4 + ceil(n / 8) bytes.
//
// Thread-safe (no state); errors as GradientCodec says.
#ifndef RINGSIDE_COMMON_SIGN_CODEC_H_
#define RINGSIDE_COMMON_SIGN_CODEC_H_

#include <cstddef>
#include <memory>

#include "common/gradient_codec.h"

namespace ringside {

// The sign codec (SegmentCodec over this file's encoding).
std::unique_ptr<GradientCodec> MakeSignCodec();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_SIGN_CODEC_H_
