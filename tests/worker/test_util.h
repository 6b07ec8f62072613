// Helpers shared by the worker compute tests: random batches and the CUDA skip reason.
#ifndef RINGSIDE_TESTS_WORKER_TEST_UTIL_H_
#define RINGSIDE_TESTS_WORKER_TEST_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/counter_rng.h"
#include "common/model_spec.h"
#include "worker/batching.h"
#include "worker/device.h"

namespace ringside::worker::testing {

// `rows` rows of N(0,1)-ish features and uniformly random labels, fixed by `seed`.
inline OwnedBatch RandomBatch(const ModelSpec& spec, int rows, uint64_t seed) {
  OwnedBatch batch;
  for (int64_t i = 0; i < int64_t{rows} * spec.inputs(); ++i) {
    batch.features.push_back(static_cast<float>(CounterNormal(seed, RngStream::kSyntheticRows, i)));
  }
  for (int r = 0; r < rows; ++r) {
    batch.labels.push_back(
        static_cast<int32_t>(CounterBelow(seed, RngStream::kSyntheticLabels, r, spec.classes())));
  }
  return batch;
}

// Why CUDA tests cannot run here, or nullopt when a device is present.
inline std::optional<std::string> NoCudaReason() {
  const absl::StatusOr<int> devices = CudaDeviceCount();
  if (devices.ok()) return std::nullopt;
  return std::string(devices.status().message());
}

}  // namespace ringside::worker::testing

#endif  // RINGSIDE_TESTS_WORKER_TEST_UTIL_H_
