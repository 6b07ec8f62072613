#include "common/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"
#include "launch/http_get.h"
#include "prometheus/text_serializer.h"

namespace ringside {
namespace {

TEST(MetricsTest, LinkCountersUseContractNamesAndLabels) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  LinkSendMetrics send = metrics.LinkSend("worker-0", "worker-1", SyncMode::kRing);
  send.bytes->Increment(12);
  metrics.LinkReceive("worker-0", "worker-1", SyncMode::kRing).bytes->Increment(12);
  // Resolving the same link twice yields the same counter.
  EXPECT_EQ(metrics.LinkSend("worker-0", "worker-1", SyncMode::kRing).bytes, send.bytes);
  const std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
  EXPECT_NE(
      text.find("ringside_link_bytes_total{dst=\"worker-1\",mode=\"ring\",src=\"worker-0\"} 12"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("ringside_link_received_bytes_total{dst=\"worker-1\",mode=\"ring\","
                      "src=\"worker-0\"} 12"),
            std::string::npos);
}

TEST(MetricsTest, LinkBytesSentSumsEverySentSeriesOfEveryModeAndRank) {
  Metrics metrics(std::make_shared<prometheus::Registry>());
  EXPECT_EQ(metrics.LinkBytesSent(), 0);
  metrics.LinkSend("worker-0", "worker-1", SyncMode::kRing).bytes->Increment(100);
  metrics.LinkSend("worker-0", "ps-0", SyncMode::kPs).bytes->Increment(20);
  metrics.LinkSend("worker-2", "worker-0", SyncMode::kRing).bytes->Increment(3);  // after a regroup
  // What it received, expected or put on the wire is not what it sent.
  metrics.LinkReceive("worker-1", "worker-0", SyncMode::kRing).bytes->Increment(1000);
  metrics.LinkSend("worker-0", "worker-1", SyncMode::kRing).expected_bytes->Increment(1000);
  EXPECT_EQ(metrics.LinkBytesSent(), 123);
}

TEST(MetricsTest, PredictedStepSecondsPerMode) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  metrics.PredictedStepSeconds(SyncMode::kRing).Set(0.25);
  metrics.PredictedStepSeconds(SyncMode::kPs).Set(0.5);
  const std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
  EXPECT_NE(text.find("ringside_predicted_step_seconds{mode=\"ring\"} 0.25"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ringside_predicted_step_seconds{mode=\"ps\"} 0.5"), std::string::npos)
      << text;
}

TEST(MetricsTest, ParsesModes) {
  EXPECT_EQ(*ParseSyncMode("ring"), SyncMode::kRing);
  EXPECT_EQ(*ParseSyncMode("ps"), SyncMode::kPs);
  EXPECT_EQ(ParseSyncMode("mpi").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsServerTest, ServesOnAFreePortAndRejectsBadAddress) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto server = MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ(MetricsServer::Start("nonsense", registry).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Issue 13: idle connections a stranger holds open must not block scraping. With civetweb's
// defaults (2 threads, 30 s timeout) the scrape below waited half a minute and its 10 s
// deadline failed it.
TEST(MetricsServerTest, KeepsAnsweringScrapesWhileIdleConnectionsAreOpen) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  metrics.WorldSize().Set(3);
  auto server = MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>((*server)->port()));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    idle.push_back(fd);  // connected, sending nothing
  }
  absl::StatusOr<std::string> scraped =
      launch::HttpGet((*server)->port(), "/metrics", absl::Seconds(10));
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_NE(scraped->find("ringside_world_size 3"), std::string::npos);
  for (int fd : idle) close(fd);
}

}  // namespace
}  // namespace ringside
