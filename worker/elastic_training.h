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
// failing past `regroup_timeout`, the assignment source lost, or ABORTED when a fault hook
// declares this worker lost (tests).
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
#include "common/state_pieces.h"
#include "common/transport_security.h"
#include "ring/collective.h"
#include "ring/wire_error.h"
#include "server/ps/ps_client.h"
#include "server/ps/shard_group.h"
#include "server/ps/shard_transfer.h"
#include "worker/assignment_source.h"
#include "worker/data_parallel.h"
#include "worker/fault_injection.h"
#include "worker/member_state.h"
#include "worker/overlapped_sync.h"
#include "worker/regroup.h"
#include "worker/test_evaluator.h"
#include "worker/timeline.h"

namespace ringside::worker {

struct ElasticOptions {
  std::string device = "cpu";
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
  // After the job's last step: stay a member (elastic: later generations still regroup, so a
  // late joiner receives the final state), or return from Run() (a static cluster).
  bool stay_after_finish = true;
  // Records every step's phases and every regroup (worker/timeline.h); null: none. Must outlive
  // the trainer.
  Timeline* timeline = nullptr;
  // While this worker is rank 0 it evaluates the job's parameters on the data's held-out test
  // set every `eval_every` steps (worker/test_evaluator.h: the shards' parameters in ps mode) and
  // hands each point here, on the evaluator's thread. Null, or data without a test set: none.
  TestEvaluator::Sink evaluations;
  // Where the test evaluator's snapshots wait on disk (TestEvaluator::Options::snapshot_prefix);
  // empty: the system's temporary directory.
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

  // Trains until the job's steps are done, calls `finished` with the result, then stays a
  // member: later generations (a worker joining, a mode switch) still regroup, so a late joiner
  // receives the final state and finishes too. Returns when a signal arrives (OK), or the first
  // error that no new generation can cure.
  using FinishedCallback = std::function<absl::Status(const ElasticResult&)>;
  // `stop` is the daemon's termination signal (TerminationSignals::notification()), or a test's.
  absl::Status Run(const absl::Notification& stop, const FinishedCallback& finished);

  // The controller announced `generation`: a collective or ps step of an older generation in
  // flight ends now instead of at its deadline. Safe from any thread.
  void Supersede(uint64_t generation);

 private:
  // Joins `assignment`'s generation at a step boundary: the ring and the shards reconfigured,
  // the regroup (worker/regroup.h) unless it is a fresh start, then the generation's sync.
  absl::Status AdoptGeneration(const GenerationAssignment& assignment);
  // The regroup of this member's state over the new ring (which it requires).
  Regroup RegroupMembers();
  // Rank 0, every `checkpoint_every_` completed steps: the job's state to the assignment source
  // (the shards' when they hold it).
  absl::Status SaveCheckpointIfDue();
  // Uploads the state of `step` as `read` reads it (AssignmentSource::SaveCheckpoint).
  absl::Status UploadCheckpoint(uint64_t step, uint64_t state_elements,
                                const StatePieceReader& read);
  // This generation's sync: the shards' sums (ps) or the ring's allreduce, then the optimiser.
  // --staleness=k, async or backup workers: pushes gradients to, and pulls parameters from, the
  // shards.
  absl::Status InstallPsSync();
  void InstallRingSync(uint64_t generation);
  // A protocol's sum, keeping this worker's share first on steps whose wire error is sampled.
  SumShares KeepingSampledShares(SumShares sum);
  // The same for an overlapped step, bucket by bucket as each is complete, then `prepare` (may
  // be null) on the bucket's part of the gradient.
  PrepareBucket KeepingSampledBuckets(std::function<void(absl::Span<float>)> prepare);
  // After a sampled step: its wire error (ring/wire_error.h) into the metrics.
  absl::Status MeasureWireError(int64_t step);
  absl::Status Step();
  // Rank 0: offers the parameters after state_.completed steps to the evaluator when a point is due
  // (again at each later step while it is busy; the final point waits for it).
  void EvaluateIfDue();
  // Waits for the evaluator's last points and logs what it deferred, skipped or failed.
  void FinishEvaluations();
  absl::StatusOr<ElasticResult> Result();
  // Waits for a generation newer than the one that failed; `why` is logged.
  absl::Status AwaitNewGeneration(uint64_t failed, const absl::Status& why,
                                  const absl::Notification& stop);
  // This generation trains with the shards holding the job's state (--staleness=k, async or
  // --backup_workers in ps mode): they apply the updates, this worker pushes and pulls.
  bool ShardsHoldState() const;

  AssignmentSource& assignments_;
  ring::Collective* const ring_;
  Metrics& metrics_;
  StepRecorder step_metrics_{&metrics_};  // per step: resolved once per mode
  const ElasticOptions options_;
  std::ostream& log_;
  const StepTraceSink trace_;

  std::unique_ptr<TrainingJob> job_;
  std::unique_ptr<TestEvaluator> evaluator_;  // reads job_'s test set: declared after it
  int64_t last_evaluated_ = -1;               // state_.completed when an offer was last taken
  MemberState state_;   // parameters, optimiser, gradient buffer, steps, where the state lives
  FaultPoints faults_;  // options_.fault at this member's steps
  uint64_t checkpoint_every_ = 0;  // the current generation's; 0: no checkpoints
  uint64_t generation_ = 0;        // 0: none joined yet
  SyncMode mode_ = SyncMode::kRing;
  WorkerSlot slot_;
  std::unique_ptr<ParameterSync> sync_;
  WireDtype wire_dtype_ = WireDtype::kFp32;  // the job's
  ring::WireErrorProbe wire_error_;
  double wire_error_max_[2] = {0, 0};  // by SyncMode: what ringside_wire_relative_error shows
  GradientStats last_stats_;
  // Ring collectives per step in this generation: its buckets and the sampled wire error's.
  uint64_t collective_stride_ = 2;
  // The parameter server of every generation (its clients, transfers and sticky generation).
  server::ShardGroup shard_group_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_ELASTIC_TRAINING_H_
