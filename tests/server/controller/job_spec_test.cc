// The job as the controller hands it out and as a member runs it: every field survives the
// round trip (eval_every included), an old controller's job without eval_every runs with the
// default, and a bad one is refused.
#include "server/controller/job_spec.h"

#include "gtest/gtest.h"

namespace ringside::server {
namespace {

TEST(JobSpecTest, EveryFieldSurvivesTheRoundTrip) {
  TrainingOptions job;
  job.model = "784,64,10";
  job.data = "fashion-mnist:/data/fm";
  job.steps = 321;
  job.eval_every = 7;
  job.batch_size = 48;
  job.optimizer = {OptimizerKind::kAdam, 0.001f};
  job.seed = 9;
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(JobSpecOf(job), "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model, job.model);
  EXPECT_EQ(back->data, job.data);
  EXPECT_EQ(back->steps, 321);
  EXPECT_EQ(back->eval_every, 7);
  EXPECT_EQ(back->batch_size, 48);
  EXPECT_EQ(back->optimizer.learning_rate, 0.001f);
  EXPECT_EQ(back->seed, 9u);
  EXPECT_EQ(back->device, "cpu");
}

TEST(JobSpecTest, AJobWithoutEvalEveryRunsWithTheDefaultAndANegativeOneIsRefused) {
  proto::JobSpec spec = JobSpecOf(TrainingOptions());
  spec.clear_eval_every();  // a controller that predates the field
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(spec, "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->eval_every, TrainingOptions().eval_every);
  spec.set_eval_every(-3);
  EXPECT_EQ(TrainingOptionsOf(spec, "cpu").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::server
