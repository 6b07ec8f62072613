#include "common/checksum.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringside {
namespace {

// Every single-bit change of the buffer changes the digest, at every position, for lengths
// that fill the four 8-byte lanes exactly and for ones that leave a byte-wise tail.
TEST(ChecksumTest, EveryBitFlipChangesTheDigest) {
  for (const size_t floats : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{33}}) {
    std::vector<float> values(floats);
    for (size_t i = 0; i < floats; ++i) values[i] = 0.25f * static_cast<float>(i) - 1.0f;
    const std::string original = ChecksumHex(values);
    EXPECT_EQ(original.size(), 16u);
    EXPECT_EQ(ChecksumHex(std::vector<float>(values)), original) << "equal buffers differ";
    std::set<std::string> digests = {original};
    for (size_t bit = 0; bit < floats * 32; ++bit) {
      std::vector<float> flipped = values;
      auto* bytes = reinterpret_cast<unsigned char*>(flipped.data());
      bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      digests.insert(ChecksumHex(flipped));
    }
    EXPECT_EQ(digests.size(), floats * 32 + 1) << floats << " floats: a flip went unseen";
  }
}

TEST(ChecksumTest, TheLengthCounts) {
  EXPECT_NE(ChecksumHex(std::vector<float>(8, 0.0f)), ChecksumHex(std::vector<float>(9, 0.0f)));
  EXPECT_NE(ChecksumHex({}), ChecksumHex(std::vector<float>(1, 0.0f)));
}

}  // namespace
}  // namespace ringside
