#include "worker/data_splits.h"

#include <algorithm>
#include <cassert>

namespace ringside::worker {
namespace {

// Where row `row`'s features start in the stored features, in features.
size_t StoredOffset(const Dataset& data, int64_t row) {
  int64_t index = row;
  if (data.stored_rows.has_value()) {
    const std::vector<int64_t>& stored = *data.stored_rows;
    const auto it = std::lower_bound(stored.begin(), stored.end(), row);
    assert(it != stored.end() && *it == row);
    index = it - stored.begin();
  }
  return static_cast<size_t>(index) * static_cast<size_t>(data.features);
}

}  // namespace

int64_t Dataset::stored_row_count() const {
  return stored_rows.has_value() ? static_cast<int64_t>(stored_rows->size()) : rows();
}

size_t Dataset::DataBytes() const {
  return x.size() * sizeof(float) + pixels.size() + y.size() * sizeof(int32_t) +
         (stored_rows.has_value() ? stored_rows->size() * sizeof(int64_t) : 0);
}

bool Dataset::Holds(absl::Span<const int64_t> rows) const {
  for (int64_t row : rows) {
    if (row < 0 || row >= this->rows()) return false;
    if (stored_rows.has_value() &&
        !std::binary_search(stored_rows->begin(), stored_rows->end(), row)) {
      return false;
    }
  }
  return true;
}

void Dataset::CopyFeatures(int64_t row, float* out) const {
  const size_t offset = StoredOffset(*this, row);
  if (!pixels.empty()) {
    const uint8_t* src = pixels.data() + offset;
    // The same expression the floats were once stored with: bit-identical batches.
    for (int j = 0; j < features; ++j) out[j] = ByteFeature(src[j]);
    return;
  }
  std::copy(x.data() + offset, x.data() + offset + features, out);
}

}  // namespace ringside::worker
