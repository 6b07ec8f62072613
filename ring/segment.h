// One segment of a ring step as plain C++ (the gRPC adapter translates RingSegment protos to and
// from this). Value types; thread-compatible.
#ifndef RINGSIDE_RING_SEGMENT_H_
#define RINGSIDE_RING_SEGMENT_H_

#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace ringside::ring {

struct SegmentHeader {
  uint64_t generation = 0;
  uint64_t collective = 0;
  int sender_rank = 0;
  int step = 0;
  int chunk = 0;
  uint64_t offset = 0;  // first element of the segment within its chunk
  uint64_t total_elements = 0;
  DType dtype = DType::kFloat32;
};

struct Segment {
  SegmentHeader header;
  std::string payload;  // raw elements; its length is a multiple of ElementSize(dtype)
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_SEGMENT_H_
