#include "common/allocator_tuning.h"

#include <malloc.h>

namespace ringside {

void TuneAllocatorForSegmentStreams() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace ringside
