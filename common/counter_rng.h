// Counter-based random numbers: every value is a pure function of (seed, stream, index), so
// parameter initialisation, synthetic data and batch shuffles are bit-identical in every process
// and on every platform, whatever order values are drawn in. Built on SplitMix64's finaliser
// (Steele, Lea & Flood 2014). Header-only; thread-safe (no state). Not cryptographic.
#ifndef RINGSIDE_COMMON_COUNTER_RNG_H_
#define RINGSIDE_COMMON_COUNTER_RNG_H_

#include <cstdint>

namespace ringside {

// Streams keep unrelated uses of one seed independent.
enum class RngStream : uint64_t {
  kParameters = 1,
  kClusterCenters = 2,
  kSyntheticRows = 3,
  kSyntheticLabels = 4,
  kEpochShuffle = 5,
  kRandomKCoordinates = 6,
  kPowerSgdFactors = 7,
};

inline uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 64 random bits for element `index` of `stream` under `seed`.
inline uint64_t CounterBits(uint64_t seed, RngStream stream, uint64_t index) {
  return Mix64(Mix64(Mix64(seed) ^ static_cast<uint64_t>(stream)) ^ index);
}

// Uniform in [0, 1) with 53 random bits (exact in double).
inline double CounterUniform(uint64_t seed, RngStream stream, uint64_t index) {
  return static_cast<double>(CounterBits(seed, stream, index) >> 11) * 0x1.0p-53;
}

// Uniform integer in [0, bound), bound >= 1 (Lemire's multiply-shift; bias below 2^-32 for
// bounds under 2^32, irrelevant here and identical everywhere).
inline uint64_t CounterBelow(uint64_t seed, RngStream stream, uint64_t index, uint64_t bound) {
  const uint64_t bits = CounterBits(seed, stream, index) >> 32;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * bound) >> 32);
}

// Approximately standard normal: the Irwin-Hall sum of 12 uniforms minus 6 (mean 0, variance 1,
// tails cut at +-6). Only additions, so no libm differences between platforms. Uses indices
// 12 * index .. 12 * index + 11 of the stream.
inline double CounterNormal(uint64_t seed, RngStream stream, uint64_t index) {
  double sum = 0.0;
  for (uint64_t k = 0; k < 12; ++k) sum += CounterUniform(seed, stream, 12 * index + k);
  return sum - 6.0;
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_COUNTER_RNG_H_
