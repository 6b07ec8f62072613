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

TEST(ParseDialAddressTest, AcceptsNamesAndIpLiteralsWithARealPort) {
  for (const char* good : {"127.0.0.1:7000", "worker-0.ringside.svc:7000", "[::1]:1",
                           "[fe80::1]:65535", "in-memory:3"}) {
    EXPECT_TRUE(ParseDialAddress(good).ok()) << good << ": " << ParseDialAddress(good).status();
  }
}

TEST(ParseDialAddressTest, RefusesWhatCannotBeDialledAndQuotesItSafely) {
  for (const std::string& bad :
       std::vector<std::string>{"not a host!:0", "host:0", " host:1", "host:1 ", "ho\tst:1",
                                "-host:1", "[::g]:1", "host", "h\x01:1"}) {
    EXPECT_EQ(ParseDialAddress(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  const std::string huge = std::string(1 << 20, 'a') + ":1";
  const absl::Status status = ParseDialAddress(huge).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), 400u) << "the error must not carry the whole address";
  EXPECT_NE(status.message().find("bytes)"), absl::string_view::npos) << status.message();
  const std::string forged = "host:1\ncontroller: member 7 registered";
  EXPECT_EQ(ParseDialAddress(forged).status().message().find('\n'), std::string::npos);
}

TEST(QuoteForLogTest, EscapesControlCharactersAndCutsLongText) {
  EXPECT_EQ(QuoteForLog("a\nb"), "\"a\\nb\"");
  EXPECT_EQ(QuoteForLog("abcdef", 3), "\"abc\"... (6 bytes)");
  EXPECT_EQ(QuoteForLog(""), "\"\"");
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
