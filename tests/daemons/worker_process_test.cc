// Real ringside-worker processes on loopback: the static ring's allreduce and its per-link
// accounting as Prometheus serves it, and data-parallel training against one process.
#include <signal.h>

#include <string>
#include <vector>

#include "common/cost_model.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/worker_processes.h"
#include "train/local_training.h"

namespace ringside {
namespace {

using testing::FindSample;
using testing::Sample;
using testing::WorkerProcesses;

TEST(WorkerProcessTest, FourWorkersAllreduceAndEveryLinkCarriesExactlyTheModel) {
  constexpr int kWorld = 4;
  constexpr int64_t kElements = int64_t{1} << 20;
  constexpr int kIters = 3;
  auto workers = WorkerProcesses::Start(
      kWorld, {"--job=allreduce", "--elements=" + std::to_string(kElements),
               "--iters=" + std::to_string(kIters), "--warmup=0", "--linger"});
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();

  std::vector<std::vector<Sample>> metrics;
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
    EXPECT_EQ(FindSample(metrics[rank], "ringside_link_bytes_total", link), theory) << rank;
    EXPECT_EQ(FindSample(metrics[rank], "ringside_link_expected_bytes_total", link), theory);
    EXPECT_EQ(FindSample(metrics[right], "ringside_link_received_bytes_total", link), theory);
    EXPECT_GT(FindSample(metrics[rank], "ringside_link_messages_total", link).value_or(0), 0);
    EXPECT_EQ(FindSample(metrics[rank], "ringside_world_size", {}), kWorld);
    EXPECT_EQ(FindSample(metrics[rank], "ringside_mode_info", {{"mode", "ring"}}), 1);
  }
  // SIGTERM by PID: a lingering worker stops cleanly.
  for (int rank = 0; rank < kWorld; ++rank) {
    const ExitStatus exit = (*workers)->process(rank).Kill();
    EXPECT_TRUE(exit.ok()) << "rank " << rank << ": " << exit.ToString() << "\n"
                           << TailOfFile((*workers)->process(rank).log_path(), 5);
  }
}

TEST(WorkerProcessTest, FourWorkersTrainIrisToTheAccuracyOfOneProcess) {
  worker::TrainingOptions options;  // the defaults: Iris, 4,16,3, 200 steps, batch 32
  options.device = "cpu";
  absl::StatusOr<worker::TrainingResult> single = worker::TrainLocally(options);
  ASSERT_TRUE(single.ok()) << single.status();

  auto workers = WorkerProcesses::Start(4, {"--job=train", "--device=cpu"});
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_TRUE((*workers)->WaitForExit(absl::Seconds(30)).ok());
  for (const nlohmann::json& result : *results) {
    EXPECT_EQ(result.value("steps", 0), options.steps);
    EXPECT_EQ(result.value("checksum", ""), (*results)[0].value("checksum", "x"))
        << "workers' parameters differ: " << result.dump();
    const double accuracy = result.value("accuracy", 0.0);
    EXPECT_GE(accuracy, 0.95) << result.dump();
    // Same global batches and gradients up to summation order: at most one row may flip.
    EXPECT_NEAR(accuracy, single->final_eval.accuracy, 1.0 / 150 + 1e-9) << result.dump();
  }
}

TEST(WorkerProcessTest, AKilledWorkerFailsTheOthersWithinTheirDeadlineNotAHang) {
  auto workers = WorkerProcesses::Start(
      4, {"--job=allreduce", "--elements=1048576", "--iters=100000", "--warmup=0", "--timeout=3s"});
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::SleepFor(absl::Seconds(2));  // the ring is running allreduces by now
  ASSERT_EQ(kill((*workers)->process(2).pid(), SIGKILL), 0);
  const absl::Time killed = absl::Now();
  for (int rank : {0, 1, 3}) {
    Subprocess& process = (*workers)->process(rank);
    absl::StatusOr<ExitStatus> exit = process.Wait(absl::Seconds(60));
    ASSERT_TRUE(exit.ok()) << "rank " << rank << " hangs:\n" << TailOfFile(process.log_path(), 5);
    EXPECT_EQ(exit->exit_code, 1) << TailOfFile(process.log_path(), 5);
    const std::string log = TailOfFile(process.log_path(), 5);
    EXPECT_NE(log.find("ring allreduce"), std::string::npos) << log;
  }
  // Each survivor gives up within its 3 s deadline, plus start-up slack on a loaded machine.
  EXPECT_LT(absl::Now() - killed, absl::Seconds(30));
}

TEST(WorkerProcessTest, ABadFlagFailsAtStartNamingTheFlag) {
  auto workers = WorkerProcesses::Start(1, {"--rank=3"});  // overrides --rank=0
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::StatusOr<ExitStatus> exit = (*workers)->process(0).Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_NE(TailOfFile((*workers)->process(0).log_path(), 5).find("--rank=3"), std::string::npos)
      << TailOfFile((*workers)->process(0).log_path(), 5);
}

}  // namespace
}  // namespace ringside
