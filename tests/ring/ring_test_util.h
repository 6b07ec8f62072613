// Helpers for ring tests: deterministic inputs whose sums are exact in float32, running one
// function per rank on its own thread, and each rank's counted link to its right.
#ifndef RINGSIDE_TESTS_RING_RING_TEST_UTIL_H_
#define RINGSIDE_TESTS_RING_RING_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "common/metrics.h"

namespace ringside::ring::testing {

// Small integers: any sum over up to 8 ranks is exact in float32.
inline float InputValue(int rank, uint64_t index) {
  return static_cast<float>(static_cast<int>((index * 7 + rank * 13 + index / 5) % 17) - 8);
}

inline std::vector<float> RankInput(int rank, uint64_t elements) {
  std::vector<float> data(elements);
  for (uint64_t i = 0; i < elements; ++i) data[i] = InputValue(rank, i);
  return data;
}

inline float ExpectedSum(int world, uint64_t index) {
  float sum = 0;
  for (int r = 0; r < world; ++r) sum += InputValue(r, index);
  return sum;
}

inline void RunRanks(int world, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) threads.emplace_back(body, rank);
  for (auto& thread : threads) thread.join();
}

// Rank r's link to rank r + 1 (mod world), counted in `metrics` as a ring link.
inline std::vector<LinkSendMetrics> RingLinks(Metrics& metrics, int world) {
  std::vector<LinkSendMetrics> links;
  for (int r = 0; r < world; ++r) {
    links.push_back(metrics.LinkSend(WorkerName(r), WorkerName((r + 1) % world), SyncMode::kRing));
  }
  return links;
}

}  // namespace ringside::ring::testing

#endif  // RINGSIDE_TESTS_RING_RING_TEST_UTIL_H_
