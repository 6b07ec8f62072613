// Training that follows the controller (an elastic job). The worker runs the job the
// controller's assignment names, with the rank, world and mode of the current generation, and
// adopts a new generation only at a step boundary. When a step's synchronisation fails (a peer
// died: deadline, broken stream, or the controller superseding the generation) the step is
// abandoned, never half-applied, and the worker waits for the next generation.
//
// Each generation begins with a regroup (worker/regroup.h: census, replay, the state's hand-over,
// the shards' load), after which every member holds the job's state: survivors resume from the
// last step any of them completed, a late joiner starts from the current state, and a lost shard
// loses nothing (in ps mode every worker applies the optimiser to the shards' sums itself, unless
// the shards hold the state: --staleness, async, --backup_workers).
//
// The trainer sees the control protocol only as an AssignmentSource and the ring only as a
// ring::Collective, so N trainers run as threads in one process in tests.
//
// Thread-compatible (one training thread); only Supersede() may be called from another (the
// controller client's watch thread). Errors: the job's (bad model, data), a regroup that keeps
// failing past `regroup_timeout`, the assignment source lost, more than kMaxNonFiniteSkips
// steps in a row whose own gradient had a NaN or infinity (FAILED_PRECONDITION naming the step:
// worker/data_parallel.h), or ABORTED when a fault hook declares this worker lost (tests).
//
// A step that fails (a message refused, a peer past the collective's `timeout`, which the log
// names when it fires) is reported to the assignment source (ReportFailedGeneration): the
// controller then forms a new generation of the same members and the job regroups and goes
// on, without an operator.
#ifndef RINGSIDE_WORKER_ELASTIC_TRAINING_H_
#define RINGSIDE_WORKER_ELASTIC_TRAINING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/transport_security.h"
#include "ring/collective.h"
#include "server/ps/ps_client.h"
#include "server/ps/shard_group.h"
#include "worker/accuracy_evaluator.h"
#include "worker/assignment_source.h"
#include "worker/checkpoint_uploads.h"
#include "worker/data_parallel.h"
#include "worker/evaluation_points.h"
#include "worker/fault_injection.h"
#include "worker/generation_sync.h"
#include "worker/member_state.h"
#include "worker/regroup.h"
#include "worker/step_listener.h"
#include "worker/timeline.h"
#include "worker/wire_error_sampler.h"

namespace ringside::worker {

struct ElasticOptions {
  // The device is the job's (TrainingOptions::device, which the assignment source fills in).
  uint64_t segment_bytes = uint64_t{1} << 20;
  uint64_t ps_window_bytes =
      server::kDefaultPsWindowBytes;                    // server::PsClientOptions::window_bytes
  absl::Duration timeout = absl::Seconds(60);           // per collective, ps step or transfer
  absl::Duration regroup_timeout = absl::Seconds(120);  // for the next generation after a failure
  // A regroup broadcasts the job's state in chunks of this many floats, so it costs one chunk of
  // memory rather than a copy of the model (4 MiB; tests make it small to cross every boundary).
  // Every member of a job must use the same (the chunks are collectives of that size).
  size_t state_chunk_floats = size_t{1} << 20;
  // Members one step behind replay the last step from its sum rather than receive the state
  // (the regroup's step 2). Every member of a job must agree; tests of the state hand-over
  // itself turn it off.
  bool replay_last_step = true;
  TransportSecurity security;  // of the channels to the shards (the ring's is the member's)
  // Called at every fault point (worker/fault_injection.h): ringside-worker's --fault_at
  // (KillSelfAt), or an in-process test's hook; null: none. When it returns true the worker is
  // lost at that point: Run() returns ABORTED at once, with nothing more sent.
  FaultHook fault;
  // Test only (ringside-worker --hold_at): having completed this many steps (or more), wait once
  // for a generation newer than the one trained in (up to regroup_timeout) before the next step, so
  // a test switches modes at an exact step instead of racing the job to it. Negative: never.
  int64_t hold_for_new_generation_after = -1;
  // After the job's last step: stay a member (elastic: later generations still regroup, so a
  // late joiner receives the final state), or return from Run() (a static cluster).
  bool stay_after_finish = true;
  // Records every step's phases and every regroup (worker/timeline.h); null: none. Must outlive
  // the trainer.
  Timeline* timeline = nullptr;
  // While this worker is rank 0 it evaluates the job's parameters on the data's held-out test
  // set every `eval_every` steps (worker/accuracy_evaluator.h: the shards' parameters in ps mode)
  // and hands each point here, on the evaluator's thread. Null, or data without a test set: none.
  AccuracyEvaluator::Sink evaluations;
  // Where the test evaluator's snapshots wait on disk
  // (AccuracyEvaluator::Options::snapshot_prefix); empty: the system's temporary directory.
  std::string evaluation_snapshot_prefix;
};

struct ElasticResult {
  TrainingResult training;
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  WorkerSlot slot;
};

// One line per completed step, for tests and reports.
struct StepTrace {
  int64_t step = 0;
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  WorkerSlot slot;
  double loss = 0;
  double seconds = 0;  // the whole step: compute, sync and update (StepTiming::total)
  absl::Time end;      // when the step ended (its start + seconds)
  absl::Span<const float> parameters;
  StepTiming timing;  // its phases, as `ringside_step_seconds` recorded them
};
using StepTraceSink = std::function<void(const StepTrace&)>;

class ElasticTrainer {
 public:
  // Everything passed must outlive the trainer. `trace` may be null.
  // `ring` may be null only when every generation is a fresh start in ps mode (a static
  // parameter-server cluster has no ring).
  ElasticTrainer(AssignmentSource& assignments, ring::Collective* ring, Metrics& metrics,
                 ElasticOptions options, std::ostream& log, StepTraceSink trace = nullptr);
  ~ElasticTrainer();

  // Trains until the job's steps are done and calls `finished` with the result. Then, with
  // `stay_after_finish` (an elastic member), it stays a member: later generations (a worker
  // joining, a mode switch) still regroup, so a late joiner receives the final state and
  // finishes too; without it (a static cluster) it returns OK at once. Returns when a signal
  // arrives (OK), or the first error that no new generation can cure.
  using FinishedCallback = std::function<absl::Status(const ElasticResult&)>;
  // `stop` is the daemon's termination signal (TerminationSignals::notification()), or a test's.
  absl::Status Run(const absl::Notification& stop, const FinishedCallback& finished);

  // The controller announced `generation`: a collective or ps step of an older generation in
  // flight ends now instead of at its deadline. Safe from any thread.
  void Supersede(uint64_t generation);

 private:
  // Joins `assignment`'s generation at a step boundary: the ring and the shards reconfigured,
  // the regroup (worker/regroup.h) unless it is a fresh start, then the generation's sync
  // (worker/generation_sync.h).
  absl::Status AdoptGeneration(const GenerationAssignment& assignment);
  // The regroup of this member's state over the new ring (which it requires);
  // RegroupOptions::shards_may_keep_state as given.
  Regroup RegroupMembers(bool shards_may_keep_state);
  // One step of the current generation, then its listeners (worker/step_listener.h).
  absl::Status Step();
  // --hold_at (ElasticOptions::hold_for_new_generation_after): reached, and its wait.
  bool HoldsForANewGeneration() const;
  absl::Status AwaitHeldGeneration();
  absl::StatusOr<ElasticResult> Result();
  // Logs what the generation that replaced this one brings: a mode switch, or a regroup.
  void LogNextGeneration(const GenerationAssignment& next);
  // Waits for a generation newer than the one whose step stopped with `why`, logged if none
  // replaced it at once; Run then logs the one that came as what it is (LogNextGeneration).
  // `report`: a failed step's refusal or deadline is reported to the assignment source first.
  absl::Status AwaitNewGeneration(uint64_t failed, const absl::Status& why,
                                  const absl::Notification& stop, bool report);

  AssignmentSource& assignments_;
  ring::Collective* const ring_;
  Metrics& metrics_;
  StepRecorder step_metrics_{&metrics_};  // per step: resolved once per mode
  const ElasticOptions options_;
  std::ostream& log_;
  const StepTraceSink trace_;

  std::unique_ptr<TrainingJob> job_;
  MemberState state_;   // parameters, optimiser, gradient buffer, steps, where the state lives
  FaultPoints faults_;  // options_.fault at this member's steps
  GenerationView generation_;  // the generation trained in; 0: none joined yet
  GenerationSync sync_;        // its sync, and its ring collectives' numbers
  GradientStats last_stats_;
  // The rule for a non-finite gradient of its own (data_parallel.h); its stop ends Run().
  NonFiniteSkips nonfinite_skips_{&metrics_.NonFiniteRefused("own_gradient"), &log_};
  bool diverged_ = false;
  bool held_ = false;  // options_.hold_for_new_generation_after has been held at
  // The parameter server of every generation (its clients, transfers and sticky generation).
  server::ShardGroup shard_group_;
  // The step listeners, made with the job (they read job_ and the shard group): the timeline and
  // the trace, the test evaluation (rank 0, data with a test set), the checkpoints and the
  // sampled wire error, called in that order.
  std::unique_ptr<StepListener> records_;
  std::unique_ptr<EvaluationPoints> evaluation_;  // null: none
  std::unique_ptr<CheckpointUploads> checkpoints_;
  std::unique_ptr<WireErrorSampler> wire_error_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_ELASTIC_TRAINING_H_
