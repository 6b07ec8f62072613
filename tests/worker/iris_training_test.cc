// Single-process training on Iris with the project defaults must reach 95% accuracy on the
// whole data set within a bounded number of steps.
#include <cstdio>

#include "gtest/gtest.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/local_training.h"

namespace ringside::worker {
namespace {

// Steps until the full-data-set accuracy first reaches `target`, or -1 within options.steps.
// Training stops there unless `run_all` (then `final_eval` is after options.steps steps).
int64_t StepsToAccuracy(const TrainingOptions& options, double target, Evaluation* final_eval,
                        bool run_all = false) {
  auto spec = ModelSpec::Parse(options.model, options.activation);
  auto data = LoadDataset(*ParseDataSpec(options.data), *spec, options.seed);
  auto evaluator = MakeGradientComputer("cpu", *spec);
  EXPECT_TRUE(spec.ok() && data.ok() && evaluator.ok());
  int64_t reached = -1;
  auto result = TrainLocally(
      options, [&](int64_t step, const GradientStats&, absl::Span<const float> params) {
        auto eval = (*evaluator)->Evaluate(params, data->AllRows(), {});
        if (reached < 0 && eval.ok() && eval->accuracy >= target) reached = step + 1;
        return run_all || reached < 0;
      });
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) *final_eval = result->final_eval;
  return reached;
}

TEST(IrisTrainingTest, DefaultsReachNinetyFivePercent) {
  // Measured over seeds 1..20: 95% after 49..85 steps; the default runs 200.
  for (uint64_t seed : {1, 2, 3}) {
    TrainingOptions options;
    options.seed = seed;
    Evaluation eval;
    const int64_t steps = StepsToAccuracy(options, 0.95, &eval, /*run_all=*/true);
    ASSERT_GT(steps, 0) << "seed " << seed << ": no 95% within " << options.steps
                        << " steps; final accuracy " << eval.accuracy;
    EXPECT_LE(steps, 150) << "seed " << seed;
    EXPECT_GE(eval.accuracy, 0.95) << "seed " << seed << " after all " << options.steps;
    std::printf(
        "iris defaults (%s/%s, adam lr %.3g, batch %lld, seed %llu): 95%% after %lld "
        "steps, %.1f%% after %lld\n",
        options.model.c_str(), options.activation.c_str(), options.optimizer.learning_rate,
        static_cast<long long>(options.batch_size), static_cast<unsigned long long>(seed),
        static_cast<long long>(steps), 100 * eval.accuracy, static_cast<long long>(options.steps));
  }
}

TEST(IrisTrainingTest, EveryOptimizerLearns) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
    TrainingOptions options;
    options.optimizer.kind = kind;
    options.optimizer.learning_rate = kind == OptimizerKind::kSgd ? 0.5f : 0.05f;
    options.steps = 400;
    Evaluation eval;
    EXPECT_GT(StepsToAccuracy(options, 0.95, &eval), 0) << OptimizerName(kind);
  }
}

TEST(IrisTrainingTest, SameSeedSameParameters) {
  TrainingOptions options;
  options.steps = 10;
  auto a = TrainLocally(options);
  auto b = TrainLocally(options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->parameters, b->parameters);
}

}  // namespace
}  // namespace ringside::worker
