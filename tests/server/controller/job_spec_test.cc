// The job as the controller hands it out and as a member runs it: every field survives the
// round trip (eval_every included), an old controller's job without eval_every runs with the
// default, a bad one is refused, the JobSpec fields and the options' description are the same
// set, and the encoding is the one members of earlier versions read.
#include "server/controller/job_spec.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/training_options_sample.h"

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

// Every field changed, the device (the member's own) passed beside the job: a field the
// description leaves out of the job spec comes back as its default.
TEST(JobSpecTest, OptionsWithEveryFieldChangedSurviveTheJobSpec) {
  const TrainingOptions sent = testing::NonDefaultTrainingOptions();
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(JobSpecOf(sent), sent.device);
  ASSERT_TRUE(back.ok()) << back.status();
  testing::ExpectSameTrainingOptions(*back, sent);
}

TEST(JobSpecTest, TheJobSpecsFieldsAreTheJobsRowsOfTheDescription) {
  std::set<std::string> fields, rows;
  const google::protobuf::Descriptor& spec = *proto::JobSpec::descriptor();
  for (int i = 0; i < spec.field_count(); ++i) fields.insert(spec.field(i)->name());
  for (const TrainingOption& option : TrainingOptionTable()) {
    if (option.scope == TrainingOptionScope::kJob) rows.insert(option.name);
  }
  EXPECT_EQ(fields, rows);
}

// The bytes a member of an earlier version (which set each field by hand) reads.
TEST(JobSpecTest, TheEncodingIsTheOneEarlierMembersRead) {
  const TrainingOptions options = testing::NonDefaultTrainingOptions();
  proto::JobSpec by_hand;
  by_hand.set_model(options.model);
  by_hand.set_activation(options.activation);
  by_hand.set_data(options.data);
  by_hand.set_steps(options.steps);
  by_hand.set_batch_size(options.batch_size);
  by_hand.set_lr(options.optimizer.learning_rate);
  by_hand.set_optimizer("momentum");
  by_hand.set_seed(options.seed);
  by_hand.set_eval_every(options.eval_every);
  by_hand.set_staleness("3");
  by_hand.set_backup_workers(2);
  by_hand.set_straggler("worker-2:2.5");
  by_hand.set_wire_dtype("bf16");
  by_hand.set_bucket_bytes(options.bucket_bytes);
  by_hand.set_compression("topk:0.0123");
  by_hand.set_compression_warmup(17);
  EXPECT_EQ(JobSpecOf(options).SerializeAsString(), by_hand.SerializeAsString());
}

TEST(JobSpecTest, AJobWithoutWireDtypeRunsInFp32AndAnUnknownOneIsRefused) {
  TrainingOptions fp16;
  fp16.wire_dtype = WireDtype::kFp16;
  proto::JobSpec spec = JobSpecOf(fp16);
  EXPECT_EQ(spec.wire_dtype(), "fp16");
  spec.clear_wire_dtype();  // a controller that predates the field
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(spec, "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->wire_dtype, WireDtype::kFp32);
  spec.set_wire_dtype("fp8");
  back = TrainingOptionsOf(spec, "cpu");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("wire_dtype=fp8"), absl::string_view::npos)
      << back.status();
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

// The parameter server's settings travel in the job spec, so every member of every generation
// (a restart, a mode switch: the controller hands out the same spec) runs the same ones; a
// controller that predates them means synchronous steps without backups or straggler.
TEST(JobSpecTest, TheSyncSettingsTravelAndAnEarlierControllerMeansSynchronous) {
  TrainingOptions options;
  options.staleness = kAsyncStaleness;
  options.straggler = Straggler{1, 3.0f};
  proto::JobSpec spec = JobSpecOf(options);
  EXPECT_EQ(spec.staleness(), "async");
  EXPECT_EQ(spec.straggler(), "worker-1:3");
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(spec, "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->staleness, kAsyncStaleness);
  EXPECT_EQ(back->straggler, (Straggler{1, 3.0f}));
  options = TrainingOptions();
  options.backup_workers = 1;
  back = TrainingOptionsOf(JobSpecOf(options), "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->backup_workers, 1);
  EXPECT_EQ(back->staleness, 0);
  spec.clear_staleness();
  spec.clear_backup_workers();
  spec.clear_straggler();
  back = TrainingOptionsOf(spec, "cpu");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->staleness, 0);
  EXPECT_EQ(back->backup_workers, 0);
  EXPECT_EQ(back->straggler, Straggler{});
  spec.set_staleness("sometimes");
  back = TrainingOptionsOf(spec, "cpu");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("staleness=sometimes"), absl::string_view::npos)
      << back.status();
}

TEST(JobSpecTest, ABadValueIsRefusedNamingTheField) {
  proto::JobSpec spec = JobSpecOf(TrainingOptions());
  spec.set_optimizer("lbfgs");
  absl::StatusOr<TrainingOptions> back = TrainingOptionsOf(spec, "cpu");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("the controller's job: optimizer=lbfgs"),
            absl::string_view::npos)
      << back.status();
  spec = JobSpecOf(TrainingOptions());
  spec.set_lr(0);
  back = TrainingOptionsOf(spec, "cpu");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("lr=0"), absl::string_view::npos) << back.status();
}

}  // namespace
}  // namespace ringside::server
