// Data parallelism without a network: N workers compute their slices of the same global batch
// with normalizer_rows = global batch size, the gradients are SUMMED (what the ring allreduce
// and the PS do), and the result must equal one worker's mean gradient of the whole batch.
#include "worker/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "common/metrics.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
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

}  // namespace
}  // namespace ringside::worker
