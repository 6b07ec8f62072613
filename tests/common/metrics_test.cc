#include "common/metrics.h"

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace ringside
