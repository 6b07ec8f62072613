#include "common/net.h"

#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(ParseHostPortTest, AcceptsHostsAndIpv6) {
  auto a = ParseHostPort("127.0.0.1:7000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7000);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->ToString(), "[::1]:0");
}

TEST(ParseHostPortTest, RejectsWithAClearMessage) {
  for (const char* bad : {"", "host", ":80", "host:", "host:99999", "host:x", "[::1:5"}) {
    auto parsed = ParseHostPort(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseHostPort("host:x").status().message().find("host:x"), absl::string_view::npos);
}

TEST(ParseHostPortListTest, SplitsAndRejectsEmpty) {
  auto list = ParseHostPortList("a:1, b:2");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].host, "b");
  EXPECT_FALSE(ParseHostPortList("").ok());
  EXPECT_FALSE(ParseHostPortList("a:1,b").ok());
}

}  // namespace
}  // namespace ringside
