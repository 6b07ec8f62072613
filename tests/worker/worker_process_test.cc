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
#include "worker/local_training.h"

namespace ringside {
namespace {

using testing::FindSample;
using testing::Sample;
using testing::WorkerProcesses;

TEST(WorkerProcessTest, FourWorkersTrainIrisToTheAccuracyOfOneProcess) {
  TrainingOptions options;  // the defaults: Iris, 4,16,3, 200 steps, batch 32
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

// A static cluster has no other generation: a lost worker ends the job on every survivor, by a
// broken link or at the latest by the collective's deadline (a peer lost between collectives is
// not told apart from one that abandoned a collective and will open a new stream), with an
// error that says why and what to do. The worker is lost at a named protocol point, not by a
// timed kill.
TEST(WorkerProcessTest, ALostWorkerEndsAStaticJobOnEverySurvivorWithTheReason) {
  auto workers = WorkerProcesses::Start(4, {"--job=train", "--steps=1000", "--timeout=3s"},
                                        {"ringside-worker"}, {{2, {"--fault_at=ring_step@5"}}});
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::StatusOr<launch::ExitStatus> victim = (*workers)->process(2).Wait(absl::Seconds(300));
  ASSERT_TRUE(victim.ok()) << "worker 2 never reached ring_step@5";
  EXPECT_NE(victim->ToString().find("signal 9"), std::string::npos) << victim->ToString();
  for (int rank : {0, 1, 3}) {
    launch::Subprocess& process = (*workers)->process(rank);
    absl::StatusOr<launch::ExitStatus> exit = process.Wait(absl::Seconds(120));
    ASSERT_TRUE(exit.ok()) << "rank " << rank << " hangs:\n"
                           << launch::TailOfFile(process.log_path(), 5);
    EXPECT_EQ(exit->exit_code, 1) << launch::TailOfFile(process.log_path(), 5);
    const std::string log = launch::TailOfFile(process.log_path(), 5);
    EXPECT_NE(log.find("training step"), std::string::npos) << log;
    EXPECT_NE(log.find("a static cluster has no other generation"), std::string::npos) << log;
  }
}

TEST(WorkerProcessTest, ABadFlagFailsAtStartNamingTheFlag) {
  auto workers = WorkerProcesses::Start(1, {"--rank=3"});  // overrides --rank=0
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::StatusOr<launch::ExitStatus> exit = (*workers)->process(0).Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_NE(launch::TailOfFile((*workers)->process(0).log_path(), 5).find("--rank=3"),
            std::string::npos)
      << launch::TailOfFile((*workers)->process(0).log_path(), 5);
}

}  // namespace
}  // namespace ringside
