// One segment of a ring step as plain C++ (the gRPC adapter decodes RingSegment messages into
// this). Value types; thread-compatible.
#ifndef RINGSIDE_RING_SEGMENT_H_
#define RINGSIDE_RING_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/wire_dtype.h"

namespace ringside::ring {

struct SegmentHeader {
  uint64_t generation = 0;
  uint64_t collective = 0;
  int sender_rank = 0;
  int step = 0;
  int chunk = 0;
  uint64_t offset = 0;  // first element of the segment within its chunk
  uint64_t total_elements = 0;
  // The elements' type as the message numbers it (WireDtypeNumber); unchecked: the inbox refuses
  // a number that names none.
  uint32_t dtype = WireDtypeNumber(WireDtype::kFp32);
  bool control = false;  // not training traffic: not counted (proto/ring.proto)
};

// The payload bytes of a segment: one or more pieces of memory kept alive by an owner. A
// segment received over gRPC stays in the slices gRPC read it into (no copy into a string), so
// its pieces may split an element anywhere; an in-memory segment is one owned string.
class SegmentPayload {
 public:
  SegmentPayload() = default;
  explicit SegmentPayload(std::string bytes);
  SegmentPayload(std::vector<absl::string_view> pieces, std::shared_ptr<const void> owner);

  size_t size() const { return size_; }
  const std::vector<absl::string_view>& pieces() const { return pieces_; }
  // Keeps the pieces' memory alive: a transport forwarding the payload holds it until sent.
  const std::shared_ptr<const void>& owner() const { return owner_; }
  std::string ToString() const;  // a copy, for tests and diagnostics

 private:
  std::vector<absl::string_view> pieces_;
  std::shared_ptr<const void> owner_;
  size_t size_ = 0;
};

struct Segment {
  SegmentHeader header;
  SegmentPayload payload;  // raw elements; its length is a multiple of ElementSizeOfNumber(dtype)
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_SEGMENT_H_
