// Data parallelism without a network: N workers compute their slices of the same global batch
// with normalizer_rows = global batch size, the gradients are SUMMED (what the ring allreduce
// and the PS do), and the result must equal one worker's mean gradient of the whole batch.
#include "worker/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "prometheus/counter.h"
#include "prometheus/text_serializer.h"
#include "tests/support/idx_files.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

struct Problem {
  ModelSpec spec;
  Dataset data;
};

Problem Make(const char* model, const char* activation, const char* data) {
  auto spec = ModelSpec::Parse(model, activation);
  EXPECT_TRUE(spec.ok());
  auto loaded = LoadDataset(*ParseDataSpec(data), *spec, 3);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return {*spec, *std::move(loaded)};
}

// max_i |a_i - b_i| / max(|b_i|, 1e-2 * max_j |b_j|): relative per element, with a floor so
// elements that are ~0 compare against the gradient's own scale.
double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0.0;
  for (float v : b) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double denom = std::max(std::fabs(static_cast<double>(b[i])), 1e-2 * scale);
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / denom);
  }
  return worst;
}

// Sum over workers of their pre-scaled gradients for step `step`; also the rows-weighted loss.
std::vector<float> SummedWorkerGradient(GradientComputer& computer, const Problem& s,
                                        const BatchSchedule& schedule,
                                        const std::vector<float>& params, int64_t step, int world,
                                        double* mean_loss) {
  std::vector<float> sum(s.spec.parameter_count(), 0.0f), local(sum.size());
  GradientOptions options;
  options.normalizer_rows = schedule.global_batch();
  double loss_sum = 0.0;
  OwnedBatch batch;
  for (int rank = 0; rank < world; ++rank) {
    GatherRows(s.data, schedule.WorkerBatchRows(step, rank, world), batch);
    auto stats = computer.ComputeGradient(params, batch.view(), absl::MakeSpan(local), options);
    EXPECT_TRUE(stats.ok()) << stats.status();
    loss_sum += stats->mean_loss * stats->rows;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += local[i];
  }
  *mean_loss = loss_sum / schedule.global_batch();
  return sum;
}

TEST(DataParallelTest, SummedShardGradientsEqualTheGlobalBatchGradient) {
  for (const auto& [model, activation, data, batch_size] :
       {std::make_tuple("4,16,3", "tanh", "iris", 23),
        std::make_tuple("10,32,16,5", "relu", "synthetic:500", 64),
        std::make_tuple("10,32,16,5", "swish", "synthetic:500", 3)}) {
    const Problem s = Make(model, activation, data);
    auto schedule = BatchSchedule::Create(s.data.rows(), batch_size, 5);
    ASSERT_TRUE(schedule.ok());
    auto computer = MakeGradientComputer("cpu", s.spec);
    ASSERT_TRUE(computer.ok());
    const std::vector<float> params = InitialParameters(s.spec, 17);
    for (int64_t step : {0, 4}) {
      OwnedBatch whole;
      GatherRows(s.data, schedule->GlobalBatchRows(step), whole);
      std::vector<float> reference(s.spec.parameter_count());
      auto stats = (*computer)->ComputeGradient(params, whole.view(), absl::MakeSpan(reference));
      ASSERT_TRUE(stats.ok());
      for (int world = 1; world <= 5; ++world) {
        double loss = 0.0;
        const std::vector<float> summed =
            SummedWorkerGradient(**computer, s, *schedule, params, step, world, &loss);
        EXPECT_LE(MaxRelativeError(summed, reference), 1e-5)
            << model << " batch " << batch_size << " step " << step << " N=" << world;
        EXPECT_NEAR(loss, stats->mean_loss, 1e-6 * stats->mean_loss);
      }
    }
  }
}

TEST(DataParallelTest, TrainingWithThreeWorkersTracksOneWorker) {
  const Problem s = Make("4,16,3", "tanh", "iris");
  auto schedule = BatchSchedule::Create(s.data.rows(), 32, 1);
  ASSERT_TRUE(schedule.ok());
  auto computer = MakeGradientComputer("cpu", s.spec);
  ASSERT_TRUE(computer.ok());
  OptimizerConfig config;
  config.kind = OptimizerKind::kMomentum;
  config.learning_rate = 0.05f;
  std::vector<float> single = InitialParameters(s.spec, 1), parallel = single;
  auto single_opt = Optimizer::Create(config, single.size());
  auto parallel_opt = Optimizer::Create(config, parallel.size());
  ASSERT_TRUE(single_opt.ok() && parallel_opt.ok());
  for (int64_t step = 0; step < 20; ++step) {
    double loss = 0.0;
    const auto g1 = SummedWorkerGradient(**computer, s, *schedule, single, step, 1, &loss);
    const auto g3 = SummedWorkerGradient(**computer, s, *schedule, parallel, step, 3, &loss);
    ASSERT_TRUE(single_opt->Step(absl::MakeSpan(single), g1).ok());
    ASSERT_TRUE(parallel_opt->Step(absl::MakeSpan(parallel), g3).ok());
  }
  double max_diff = 0.0;
  for (size_t i = 0; i < single.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(single[i]) - parallel[i]));
  }
  EXPECT_LT(max_diff, 1e-5);
}

// The step metrics of a mode are made the first time that mode records a step (a worker that
// never ran in ps mode exports no ps step series, as before) and only updated after that: the
// handles a step uses are the ones resolved then.
TEST(StepRecorderTest, ResolvesEachModeOnceAtItsFirstStep) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  StepRecorder recorder(&metrics);
  auto has = [&](const std::string& line) {
    const std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
    return text.find(line) != std::string::npos;
  };
  EXPECT_FALSE(has("ringside_steps_total{"));
  const SyncTiming timing{absl::Milliseconds(2), absl::Milliseconds(3)};
  recorder.Record(SyncMode::kRing, absl::Milliseconds(1), timing, 0.5);
  recorder.Record(SyncMode::kRing, absl::Milliseconds(1), timing, 0.25);
  EXPECT_TRUE(has("ringside_steps_total{mode=\"ring\"} 2"));
  EXPECT_TRUE(has("ringside_training_loss{mode=\"ring\"} 0.25"));
  EXPECT_TRUE(has("ringside_step_seconds_count{mode=\"ring\",phase=\"sync\"} 2"));
  EXPECT_TRUE(has("ringside_step_seconds_sum{mode=\"ring\",phase=\"update\"} 0.006"));
  EXPECT_FALSE(has("mode=\"ps\""));

  recorder.Record(SyncMode::kPs, absl::Milliseconds(1), timing, 1.5);
  EXPECT_TRUE(has("ringside_steps_total{mode=\"ps\"} 1"));
  EXPECT_TRUE(has("ringside_steps_total{mode=\"ring\"} 2"));
  // Metrics::Steps hands out the very series the recorder updates.
  EXPECT_EQ(metrics.Steps(SyncMode::kPs).steps->Value(), 1);
  EXPECT_EQ(metrics.Steps(SyncMode::kRing).compute,
            &metrics.StepSeconds(SyncMode::kRing, StepPhase::kCompute));

  StepRecorder none(nullptr);
  none.Record(SyncMode::kRing, absl::Milliseconds(1), timing, 0);  // records nothing
  EXPECT_TRUE(has("ringside_steps_total{mode=\"ring\"} 2"));
}

// The window: every row the slot's steps use, from the first step on, as far as the budget goes
// (at least one step, at most the job's last).
TEST(WindowRowsTest, CoverTheSlotsStepsWithinTheBudget) {
  const BatchSchedule schedule = *BatchSchedule::Create(1000, 30, 4);
  const WorkerSlot slot{1, 3};  // 10 rows a step
  auto union_of = [&](int64_t first, int64_t last) {
    std::vector<int64_t> rows;
    for (int64_t step = first; step < last; ++step) {
      for (int64_t row : schedule.WorkerBatchRows(step, slot.rank, slot.world)) rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
  };
  EXPECT_EQ(WindowRows(schedule, slot, 5, 100, 10, 1 << 20), union_of(5, 100));
  EXPECT_EQ(WindowRows(schedule, slot, 5, 100, 10, 350), union_of(5, 8));  // 100 B a step
  EXPECT_EQ(WindowRows(schedule, slot, 5, 100, 10, 0), union_of(5, 6));
  EXPECT_EQ(WindowRows(schedule, slot, 7, 7, 10, 1 << 20), union_of(7, 8));
  EXPECT_TRUE(WindowRows(schedule, WorkerSlot{40, 41}, 0, 10, 10, 1 << 20).empty());
}

// A Fashion-MNIST job holds the features of no row until a slot's rows are asked for, then those
// of the rows its slot's steps use (a third of the job's, not the whole set), and another slot's
// when the slot changes; every share's gradient is the one computed from the whole set, bit for
// bit.
TEST(TrainingJobTest, AFashionMnistJobHoldsOnlyItsSlotsRows) {
  auto dir = launch::TempDir::Create("ringside-job-rows-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(ringside::testing::WriteTinyFashionMnist(dir->path(), 300, 20));
  TrainingOptions options;
  options.model = "20,8,10";
  options.data = "fashion-mnist:" + dir->path();
  options.batch_size = 12;
  options.steps = 6;
  // The reference below is the CPU computer's, bit for bit: on a GPU machine `auto` would pick
  // CUDA, whose sums round differently (an H100 run showed it).
  options.device = "cpu";
  auto job = TrainingJob::Create(options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->training_set().rows(), 300);
  EXPECT_EQ((*job)->training_set().stored_row_count(), 0);
  // The test set: its labels alone; each evaluation reads the images file a piece at a time.
  EXPECT_EQ((*job)->test_set().rows(), 20);
  EXPECT_EQ((*job)->test_set().stored_row_count(), 0);
  EXPECT_EQ((*job)->test_set().DataBytes(), 20 * sizeof(int32_t));

  const ModelSpec& spec = (*job)->spec();
  const DataSplits whole = *LoadDataSplits(*ParseDataSpec(options.data), spec, options.seed);
  const BatchSchedule schedule = *BatchSchedule::Create(300, 12, options.seed);
  auto computer = MakeGradientComputer("cpu", spec);
  ASSERT_TRUE(computer.ok());
  const std::vector<float> params = InitialParameters(spec, 9);
  GradientOptions scaled;
  scaled.normalizer_rows = 12;
  auto expect_whole_sets_gradient = [&](int64_t step, WorkerSlot slot) {
    SCOPED_TRACE(absl::StrCat("step ", step, ", rank ", slot.rank, " of ", slot.world));
    std::vector<float> got(spec.parameter_count()), want(got.size());
    ASSERT_TRUE((*job)->ComputeShare(step, slot, params, absl::MakeSpan(got)).ok());
    OwnedBatch batch;
    GatherRows(whole.train, schedule.WorkerBatchRows(step, slot.rank, slot.world), batch);
    ASSERT_TRUE(
        (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(want), scaled).ok());
    EXPECT_EQ(got, want);
  };

  const WorkerSlot first{1, 3};
  ASSERT_TRUE((*job)->PrepareRows(6, first).ok());  // past the last step: nothing to read
  EXPECT_EQ((*job)->training_set().stored_row_count(), 0);
  ASSERT_TRUE((*job)->PrepareRows(0, first).ok());
  const Dataset& held = (*job)->training_set();
  EXPECT_EQ(*held.stored_rows, WindowRows(schedule, first, 0, 6, 20, kTrainingWindowBytes));
  EXPECT_LE(held.stored_row_count(), 6 * 4);
  EXPECT_EQ(held.pixels.size(), held.stored_rows->size() * 20);
  for (int64_t step = 0; step < 6; ++step) expect_whole_sets_gradient(step, first);

  const WorkerSlot second{0, 2};  // a regroup: the rest of the job in another slot
  expect_whole_sets_gradient(3, second);
  EXPECT_EQ(*(*job)->training_set().stored_rows,
            WindowRows(schedule, second, 3, 6, 20, kTrainingWindowBytes));
  for (int64_t step = 4; step < 6; ++step) expect_whole_sets_gradient(step, second);

  // Its evaluation is the whole test set's, bit for bit.
  const Evaluation want = *EvaluateDataset(**computer, params, whole.test);
  const absl::StatusOr<Evaluation> got = (*job)->Evaluate(params);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->rows, 20);
  EXPECT_EQ(got->correct, want.correct);
  EXPECT_EQ(got->mean_loss, want.mean_loss);
  for (int64_t chunk : {1, 7, 20, 64}) {  // pieces of the same size as the whole set's
    SCOPED_TRACE(chunk);
    const Evaluation held = *EvaluateDataset(**computer, params, whole.test, chunk);
    const absl::StatusOr<Evaluation> read =
        EvaluateDataset(**computer, params, (*job)->test_set(), chunk);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->mean_loss, held.mean_loss);
    EXPECT_EQ(read->correct, held.correct);
  }
  // A file that no longer has the test set's shape is refused, not misread.
  ASSERT_TRUE(ringside::testing::WriteTinyFashionMnist(dir->path(), 300, 21));
  EXPECT_EQ((*job)->Evaluate(params).status().code(), absl::StatusCode::kFailedPrecondition);
}

// A regroup's prefetched window (PrefetchRows) is what PrepareRows would have read, so the job
// trains on the whole set's rows as ever; one that holds other rows than those asked for (the
// regroup settled on another step or slot) is read again, and a read that failed is read again
// where the rows are asked for, its error said then, not lost.
TEST(TrainingJobTest, APrefetchedWindowIsTakenWhereItHoldsTheRowsAskedFor) {
  auto dir = launch::TempDir::Create("ringside-job-prefetch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(ringside::testing::WriteTinyFashionMnist(dir->path(), 3000, 20));
  TrainingOptions options;
  options.model = "20,8,10";
  options.data = "fashion-mnist:" + dir->path();
  options.batch_size = 12;
  options.steps = 200;  // under one epoch (250 steps): each row in one step's batch alone
  options.device = "cpu";
  auto job = TrainingJob::Create(options);
  ASSERT_TRUE(job.ok()) << job.status();
  const BatchSchedule schedule = *BatchSchedule::Create(3000, 12, options.seed);
  // A window of this tiny set covers every step: a later step is in the one read at step 0.
  const auto window = [&](WorkerSlot slot, int64_t step) {
    return WindowRows(schedule, slot, step, options.steps, 20, kTrainingWindowBytes);
  };

  const WorkerSlot first{1, 3};
  (*job)->PrefetchRows(0, first);
  ASSERT_TRUE((*job)->PrepareRows(7, first).ok());  // a later step the window holds
  EXPECT_EQ(*(*job)->training_set().stored_rows, window(first, 0));

  const WorkerSlot second{0, 2};
  (*job)->PrefetchRows(5, first);  // held already: nothing to read
  (*job)->PrefetchRows(5, second);
  ASSERT_TRUE((*job)->PrepareRows(5, second).ok());
  EXPECT_EQ(*(*job)->training_set().stored_rows, window(second, 5));

  const WorkerSlot third{3, 4};    // the batches' last quarter: in neither window
  (*job)->PrefetchRows(3, first);  // a guess the regroup does not keep to
  ASSERT_TRUE((*job)->PrepareRows(9, third).ok());
  EXPECT_EQ(*(*job)->training_set().stored_rows, window(third, 9));

  // The files gone while the prefetch reads and where the rows are asked for: an error, said.
  const std::string images = dir->path() + "/train-images-idx3-ubyte.gz";
  const std::string moved = dir->path() + "/moved.gz";
  ASSERT_EQ(std::rename(images.c_str(), moved.c_str()), 0);
  const WorkerSlot fourth{0, 1};
  (*job)->PrefetchRows(2, fourth);
  const absl::Status missing = (*job)->PrepareRows(2, fourth);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("train-images"), absl::string_view::npos) << missing;
  ASSERT_EQ(std::rename(moved.c_str(), images.c_str()), 0);
  ASSERT_TRUE((*job)->PrepareRows(2, fourth).ok());
  EXPECT_EQ(*(*job)->training_set().stored_rows, window(fourth, 2));
}

// What a sync is handed: the share as it would be sent.
class RecordingSync final : public ParameterSync {
 public:
  SyncMode mode() const override { return SyncMode::kRing; }
  absl::StatusOr<SyncTiming> Step(int64_t, absl::Span<float> gradient, absl::Span<float>) override {
    sent_.assign(gradient.begin(), gradient.end());
    return SyncTiming{};
  }
  const std::vector<float>& sent() const { return sent_; }

 private:
  std::vector<float> sent_;
};

TEST(NonFiniteGradientTest, ANonFiniteShareIsSentAsZerosAndCounted) {
  TrainingOptions options;
  options.model = "4,8,3";
  options.data = "synthetic:64";
  options.batch_size = 16;
  auto job = TrainingJob::Create(options);
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<float> params = (*job)->InitialParameters();
  // A diverged model: its gradient is NaN throughout.
  std::fill(params.begin(), params.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> gradient(params.size());
  RecordingSync sync;
  auto stats = TrainStep(**job, 0, WorkerSlot{0, 1}, sync, absl::MakeSpan(params),
                         absl::MakeSpan(gradient), nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->non_finite, 0);
  ASSERT_EQ(sync.sent().size(), params.size());
  for (float value : sync.sent()) ASSERT_TRUE(std::isfinite(value)) << "a NaN was sent";
}

TEST(NonFiniteGradientTest, MoreThanTheLimitOfSuchStepsInARowStopsTheWorkerNamingTheStep) {
  prometheus::Counter skipped;
  std::ostringstream log;
  NonFiniteSkips skips(&skipped, &log);
  GradientStats bad, good;
  bad.non_finite = 5;
  int64_t step = 0;
  for (int i = 0; i < kMaxNonFiniteSkips; ++i)
    ASSERT_TRUE(skips.AfterStep(step++, 2, bad, 10).ok());
  ASSERT_TRUE(skips.AfterStep(step++, 2, good, 10).ok()) << "a finite step ends the run";
  for (int i = 0; i < kMaxNonFiniteSkips; ++i)
    ASSERT_TRUE(skips.AfterStep(step++, 2, bad, 10).ok());
  const absl::Status stop = skips.AfterStep(step, 2, bad, 10);
  EXPECT_EQ(stop.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(stop.message().find(absl::StrCat("worker-2's own gradient of step ", step)),
            std::string::npos)
      << stop;
  EXPECT_EQ(skipped.Value(), 2 * kMaxNonFiniteSkips + 1);
  EXPECT_NE(log.str().find("worker-2's own gradient of step 0 had 5 of 10 values NaN or infinite"),
            std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace ringside::worker
