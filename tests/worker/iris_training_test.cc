// Single-process training on Iris with the project defaults must reach 95% accuracy on the
// whole data set within a bounded number of steps.
#include "gtest/gtest.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/local_training.h"

namespace ringside::worker {
namespace {

// Steps until the full-data-set accuracy first reaches `target`, or -1 within options.steps.
int64_t StepsToAccuracy(const TrainingOptions& options, double target, Evaluation* final_eval) {
  auto spec = ModelSpec::Parse(options.model, options.activation);
  auto data = LoadDataset(*ParseDataSpec(options.data), *spec, options.seed);
  auto evaluator = MakeGradientComputer("cpu", *spec);
  EXPECT_TRUE(spec.ok() && data.ok() && evaluator.ok());
  int64_t reached = -1;
  auto result = TrainLocally(options, [&](int64_t step, const GradientStats&,
                                          absl::Span<const float> params) {
    auto eval = (*evaluator)->Evaluate(params, data->AllRows(), {});
    if (eval.ok() && eval->accuracy >= target) reached = step + 1;
    return reached < 0;
  });
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) *final_eval = result->final_eval;
  return reached;
}

TEST(IrisTrainingTest, DefaultsReachNinetyFivePercent) {
  const TrainingOptions defaults;
  Evaluation eval;
  const int64_t steps = StepsToAccuracy(defaults, 0.95, &eval);
  ASSERT_GT(steps, 0) << "no 95% within " << defaults.steps << " steps; final accuracy "
                      << eval.accuracy;
  EXPECT_GE(eval.accuracy, 0.95);
  RecordProperty("steps_to_95", static_cast<int>(steps));
  std::printf("iris defaults (%s/%s, adam lr %.3g, batch %lld): 95%% after %lld steps\n",
              defaults.model.c_str(), defaults.activation.c_str(),
              defaults.optimizer.learning_rate, static_cast<long long>(defaults.batch_size),
              static_cast<long long>(steps));
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
