#include "ring/segment.h"

#include <utility>

namespace ringside::ring {

SegmentPayload::SegmentPayload(std::string bytes) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  size_ = owned->size();
  if (size_ > 0) pieces_.push_back(*owned);
  owner_ = std::move(owned);
}

SegmentPayload::SegmentPayload(std::vector<absl::string_view> pieces,
                               std::shared_ptr<const void> owner)
    : pieces_(std::move(pieces)), owner_(std::move(owner)) {
  for (absl::string_view piece : pieces_) size_ += piece.size();
}

std::string SegmentPayload::ToString() const {
  std::string bytes;
  bytes.reserve(size_);
  for (absl::string_view piece : pieces_) bytes.append(piece.data(), piece.size());
  return bytes;
}

}  // namespace ringside::ring
