// Real `ringside-bench ring-rank` processes on loopback: the static ring's allreduce and its
// per-link accounting as Prometheus serves it.
#include <string>
#include <vector>

#include "common/cost_model.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using testing::FindSample;
using testing::Sample;
using testing::WorkerProcesses;

TEST(RingRankProcessTest, FourRanksAllreduceAndEveryLinkCarriesExactlyTheModel) {
  constexpr int kWorld = 4;
  constexpr int64_t kElements = int64_t{1} << 20;
  constexpr int kIters = 3;
  auto workers =
      WorkerProcesses::Start(kWorld,
                             {"--elements=" + std::to_string(kElements),
                              "--iters=" + std::to_string(kIters), "--warmup=0", "--linger"},
                             {"ringside-bench", "ring-rank"});
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();

  std::vector<std::vector<launch::Sample>> metrics;
  for (int rank = 0; rank < kWorld; ++rank) {
    const nlohmann::json& result = (*results)[rank];
    EXPECT_TRUE(result.value("check_ok", false)) << result.dump();
    EXPECT_EQ(result.value("checksum", ""), (*results)[0].value("checksum", "x"))
        << "rank " << rank << " holds a different buffer";
    metrics.push_back(testing::ScrapeMetrics(result.value("metrics_port", 0)));
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    const int right = (rank + 1) % kWorld;
    const std::map<std::string, std::string> link = {
        {"src", WorkerName(rank)}, {"dst", WorkerName(right)}, {"mode", "ring"}};
    // 2(N-1)/N * K * 4 bytes per allreduce; K is divisible by N here, so every chunk is K/N.
    const double theory = 2.0 * (kWorld - 1) / kWorld * kElements * 4 * kIters;
    EXPECT_EQ(4.0 * RingElementsSentByRank(kElements, kWorld, rank) * kIters, theory);
    EXPECT_EQ(launch::FindSample(metrics[rank], "ringside_link_bytes_total", link), theory) << rank;
    EXPECT_EQ(launch::FindSample(metrics[rank], "ringside_link_expected_bytes_total", link),
              theory);
    EXPECT_EQ(launch::FindSample(metrics[right], "ringside_link_received_bytes_total", link),
              theory);
    EXPECT_GT(launch::FindSample(metrics[rank], "ringside_link_messages_total", link).value_or(0),
              0);
    EXPECT_EQ(launch::FindSample(metrics[rank], "ringside_world_size", {}), kWorld);
    EXPECT_EQ(launch::FindSample(metrics[rank], "ringside_mode_info", {{"mode", "ring"}}), 1);
  }
  // SIGTERM by PID: a lingering worker stops cleanly.
  for (int rank = 0; rank < kWorld; ++rank) {
    const launch::ExitStatus exit = (*workers)->process(rank).Kill();
    EXPECT_TRUE(exit.ok()) << "rank " << rank << ": " << exit.ToString() << "\n"
                           << launch::TailOfFile((*workers)->process(rank).log_path(), 5);
  }
}

}  // namespace
}  // namespace ringside
