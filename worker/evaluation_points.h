// When rank 0 offers the job's parameters to its test evaluator (worker/accuracy_evaluator.h), so
// the test-accuracy curve has a point every `eval_every` steps, the initial parameters first and
// the final ones last: in ps mode the shards' own copy, read on the evaluator's thread while this
// worker trains on; else (ring mode, or the shards holding the state, whose ranges may hold
// different numbers of updates at any moment) a snapshot of the parameters this worker computes
// its next step on. A step listener (worker/step_listener.h); thread-compatible.
#ifndef RINGSIDE_WORKER_EVALUATION_POINTS_H_
#define RINGSIDE_WORKER_EVALUATION_POINTS_H_

#include <cstdint>
#include <memory>
#include <ostream>

#include "absl/status/status.h"
#include "common/metrics.h"
#include "common/training_options.h"
#include "server/ps/shard_group.h"
#include "worker/accuracy_evaluator.h"
#include "worker/step_listener.h"

namespace ringside::worker {

class EvaluationPoints final : public StepListener {
 public:
  // `job` gives eval_every and steps; `shards` is read in ps mode; `metrics` counts what this
  // worker sent (each point's sent_bytes). Everything referred to must outlive this.
  EvaluationPoints(std::unique_ptr<AccuracyEvaluator> evaluator, const TrainingOptions& job,
                   server::ShardGroup& shards, const Metrics& metrics)
      : evaluator_(std::move(evaluator)), job_(job), shards_(shards), metrics_(metrics) {}

  // The initial parameters, the curve's first point, before the job's first step.
  void BeforeStep(const GenerationView& generation, const MemberState& state) override;
  absl::Status AfterStep(const CompletedStep& step) override;
  // Waits for the evaluator's last points and logs what it deferred, skipped or failed.
  void Finish(int rank, std::ostream& log);

 private:
  // Offers the parameters after state.completed steps when a point is due (again at each later
  // step while the evaluator is busy; the final point waits for it).
  void EvaluateIfDue(const GenerationView& generation, const MemberState& state);

  std::unique_ptr<AccuracyEvaluator> evaluator_;
  const TrainingOptions& job_;
  server::ShardGroup& shards_;
  const Metrics& metrics_;
  int64_t last_evaluated_ = -1;  // the completed steps when an offer was last taken
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_EVALUATION_POINTS_H_
