#include "bench/flag_types.h"

#include "bench/ring_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ByteSizeTest, ParsesUnits) {
  ByteSizeList sizes;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("4096, 64KiB,1MiB,2GiB,1KB,3MB,1GB,8B", &sizes, &error)) << error;
  EXPECT_THAT(sizes.bytes,
              ElementsAre(4096, 64 << 10, 1 << 20, int64_t{2} << 30, 1000, 3000000, 1000000000, 8));
  EXPECT_EQ(AbslUnparseFlag(ByteSizeList{{1 << 20, 64 << 10, 1000}}), "1MiB,64KiB,1000B");
}

TEST(ByteSizeTest, RejectsBadSizes) {
  ByteSizeList sizes{{4}};
  std::string error;
  for (const char* bad : {"", "0", "-4", "3", "1.5MiB", "MiB", "12XB", "1MiB,,x"}) {
    EXPECT_FALSE(AbslParseFlag(bad, &sizes, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
  EXPECT_FALSE(AbslParseFlag("6", &sizes, &error));
  EXPECT_THAT(error, HasSubstr("multiple of 4"));
  EXPECT_THAT(sizes.bytes, ElementsAre(4));  // untouched on failure
}

TEST(IntListTest, ParsesAndRejects) {
  IntList list;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("2,4, 8", &list, &error));
  EXPECT_THAT(list.values, ElementsAre(2, 4, 8));
  EXPECT_EQ(AbslUnparseFlag(list), "2,4,8");
  EXPECT_FALSE(AbslParseFlag("2,x", &list, &error));
  EXPECT_FALSE(AbslParseFlag("0", &list, &error));
  EXPECT_FALSE(AbslParseFlag("", &list, &error));
}

TEST(ImplementationListTest, ParsesNamesAndDeduplicates) {
  ImplementationList list;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("gloo_ring_chunked,ringside,gloo_ring_chunked", &list, &error));
  EXPECT_THAT(list.values,
              ElementsAre(Implementation::kGlooRingChunked, Implementation::kRingside));
  EXPECT_EQ(AbslUnparseFlag(list), "gloo_ring_chunked,ringside");
  EXPECT_FALSE(AbslParseFlag("nccl", &list, &error));
  EXPECT_THAT(error, HasSubstr("nccl"));
}

}  // namespace
}  // namespace ringside::bench
