#include "worker/evaluation_points.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/ps/shard_transfer.h"

namespace ringside::worker {

void EvaluationPoints::BeforeStep(const GenerationView& generation, const MemberState& state) {
  if (state.completed == 0) EvaluateIfDue(generation, state);
}

absl::Status EvaluationPoints::AfterStep(const CompletedStep& step) {
  // Rank 0 evaluates, but any worker may become rank 0: every one counts what it sent.
  evaluator_->StepEnded(step.state.completed, step.timing.start,
                        step.timing.start + step.timing.total(), step.stats.mean_loss,
                        static_cast<int64_t>(metrics_.LinkBytesSent()));
  EvaluateIfDue(step.generation, step.state);
  return absl::OkStatus();
}

void EvaluationPoints::EvaluateIfDue(const GenerationView& generation, const MemberState& state) {
  const int64_t completed = state.completed;
  if (generation.slot.rank != 0 || completed == last_evaluated_) return;
  // A point every eval_every steps; a worker that skipped steps (backup workers), or found the
  // evaluator busy, takes the first step past each multiple it missed.
  const bool missed =
      last_evaluated_ >= 0 && completed / job_.eval_every > last_evaluated_ / job_.eval_every;
  const bool last = completed == job_.steps;
  if (completed % job_.eval_every != 0 && !missed && !last) return;
  // The final parameters' point is never deferred: the job waits for the evaluator to be idle.
  if (last) evaluator_->Drain();
  const bool taken = generation.mode == SyncMode::kPs && !generation.shards_hold_state
                         ? evaluator_->OfferShardRead(
                               completed,
                               [read = shards_.transfer()](
                                   uint64_t count, const AccuracyEvaluator::ValuesWriter& write) {
                                 return server::ReadShardParameters(read, count, write);
                               })
                         : evaluator_->OfferSnapshot(completed, state.parameters);
  if (taken) last_evaluated_ = completed;
}

void EvaluationPoints::Finish(int rank, std::ostream& log) {
  evaluator_->Drain();
  const AccuracyEvaluator::Failures failures = evaluator_->failures();
  const int64_t deferred = evaluator_->deferred();
  const int64_t repeated = evaluator_->repeated();
  if (failures.count == 0 && deferred == 0 && repeated == 0) return;
  log << WorkerName(rank) << ": test evaluations: " << deferred
      << " deferred to a later step (a read in progress or the snapshots' disk budget spent when "
         "due), "
      << repeated << " skipped (a shard read of a step already evaluated), " << failures.count
      << " failed"
      << (failures.count > 0 ? absl::StrCat(" (last: ", failures.last.message(), ")")
                             : std::string())
      << "\n";
  log.flush();
}

}  // namespace ringside::worker
