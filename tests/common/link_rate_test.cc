#include "common/link_rate.h"

#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(LinkRateTest, ReadsTcUnits) {
  const struct {
    const char* text;
    double bits_per_second;
  } cases[] = {
      {"100mbit", 100e6},       {"1gbit", 1e9},   {"20mbit", 20e6},   {"500kbit", 500e3},
      {"2tbit", 2e12},          {"1000", 1000},   {"64bit", 64},      {"12500kbps", 100e6},
      {"1mbps", 8e6},           {"3bps", 24},     {"1kibit", 1024},   {"20mibit", 20 * 1048576.0},
      {"1gibit", 1073741824.0}, {"1kibps", 8192}, {"2.5mbit", 2.5e6}, {"100MBit", 100e6},
      {"1GBIT", 1e9},
  };
  for (const auto& c : cases) {
    absl::StatusOr<LinkRate> rate = ParseLinkRate(c.text);
    ASSERT_TRUE(rate.ok()) << c.text << ": " << rate.status();
    EXPECT_DOUBLE_EQ(rate->bits_per_second, c.bits_per_second) << c.text;
    EXPECT_DOUBLE_EQ(rate->bytes_per_second(), c.bits_per_second / 8) << c.text;
    EXPECT_EQ(rate->text, c.text);
  }
}

// What a step model divides payload by: 1448 payload bytes a 1514-byte frame, and half a 66-byte
// acknowledgement of the other direction's data beside it.
TEST(LinkRateTest, TcpPayloadIsTheFramesShare) {
  absl::StatusOr<LinkRate> rate = ParseLinkRate("100mbit");
  ASSERT_TRUE(rate.ok()) << rate.status();
  EXPECT_DOUBLE_EQ(rate->payload_bytes_per_second(), 12.5e6 * 1448 / 1547);
}

TEST(LinkRateTest, RefusesWhatTcWouldNot) {
  for (const char* text : {"", "mbit", "fast", "100 mbit", "-5mbit", "0mbit", "0", "1e", "100mbits",
                           "10xbit", "nanmbit", "infmbit", "1bit", "100mbit100"}) {
    absl::StatusOr<LinkRate> rate = ParseLinkRate(text);
    ASSERT_FALSE(rate.ok()) << "'" << text << "' was accepted";
    EXPECT_EQ(rate.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(rate.status().message().find("100mbit"), absl::string_view::npos)
        << "the error shows an accepted form: " << rate.status();
  }
}

}  // namespace
}  // namespace ringside
