// Test accuracy during training, off the step's critical path. Rank 0's trainer tells the
// evaluator when each step ended (StepEnded: a few words under a lock) and, every `eval_every`
// steps, offers it an evaluation: in ring mode a snapshot of its parameters, copied at the step
// boundary (every member holds the same); in ps mode a reader of the shards' own parameters,
// the authoritative copy, which the evaluator's reader thread calls at once (GetParameters, a
// transfer of milliseconds), so the training thread waits for neither the transfer nor the
// evaluation. The evaluator's thread computes loss and accuracy on the held-out test set with its
// own gradient computer, at the lowest CPU priority (nice 19), and hands each point to the sink.
// Its time (the read's included) is the point's own `eval_seconds`, in no step's compute, sync or
// update phase.
//
// Points: `step` is the number of steps the evaluated parameters had completed (0: the initial
// ones); `seconds` when that step ended, since the start of the first step this evaluator was
// told about (the cluster's first step: every worker runs step 0 at once); `loss` that step's
// training loss as StepEnded reported it. The shards move on while they are read, so a ps point
// carries the step the shards held when read (all of them the same one: a read that straddles a
// step is read again), which can be a little later than the step it was offered at.
//
// Memory: one copy of the parameters, K floats allocated at the first offer taken, which a
// snapshot or a shard read fills and the evaluation reads. A snapshot offered while that copy is
// in use waits on disk (Options::spill_prefix: written from the trainer's own parameters, read
// back into the copy when its turn comes, in order; not in the process's memory), up to
// Options::max_spilled_bytes. An offer that cannot wait (a shard read, which must read the shards
// when due; no spill directory; the disk budget spent) is refused and nothing is copied: the
// trainer offers again at its next step, so that point comes at the first step the evaluator is
// free (counted in deferred()). Evaluating off the critical path thus costs one copy of the
// parameters, whatever K is.
//
// Thread-safe: the trainer calls StepEnded/Offer*/Drain from its thread; the sink runs on the
// evaluator's (compute) thread, one point at a time. An evaluation that fails (a shard unreachable,
// the shards never agreeing on a step) is counted and its error kept (failures()), never fatal.
#ifndef RINGSIDE_WORKER_TEST_EVALUATOR_H_
#define RINGSIDE_WORKER_TEST_EVALUATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/cluster_files.h"
#include "worker/dataset.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

class TestEvaluator {
 public:
  using Sink = std::function<void(const EvaluationLine&)>;
  // Reads the shards' parameters into `out` (K floats) and returns the step they held
  // (server::ReadShardParameters with the generation's shards and keys).
  using ShardReader = std::function<absl::StatusOr<uint64_t>(absl::Span<float> out)>;

  struct Options {
    // A ps read that finds the shards on different steps is tried this many times in all.
    int read_attempts = 8;
    // How long a ps point waits for the trainer to report the step the shards held.
    absl::Duration step_report_timeout = absl::Seconds(60);
    // Rows per forward pass (EvaluateInChunks). Small, because OpenBLAS 0.3.21 runs a call's
    // work on one thread pool shared with the training thread (it has no per-thread thread
    // count): a short call holds the pool for a few milliseconds, not for a whole test set.
    int64_t chunk_rows = 256;
    // Snapshots offered while the copy is in use wait in a directory `<spill_prefix>XXXXXX`, made
    // at the first and removed with the evaluator; empty: such offers are refused.
    std::string spill_prefix;
    // The most bytes of snapshots waiting there.
    uint64_t max_spilled_bytes = uint64_t{1} << 30;
  };

  // `test` must outlive the evaluator; `device` as MakeGradientComputer takes it. Starts the
  // threads; the parameters' copy is allocated when the first offer is taken.
  static absl::StatusOr<std::unique_ptr<TestEvaluator>> Create(const ModelSpec& spec,
                                                               const Dataset& test,
                                                               const std::string& device, Sink sink,
                                                               Options options);
  static absl::StatusOr<std::unique_ptr<TestEvaluator>> Create(const ModelSpec& spec,
                                                               const Dataset& test,
                                                               const std::string& device,
                                                               Sink sink) {
    return Create(spec, test, device, std::move(sink), Options());
  }
  // Stops the threads: a read or an evaluation in progress finishes first, a point not yet
  // evaluated is dropped.
  ~TestEvaluator();
  TestEvaluator(const TestEvaluator&) = delete;
  TestEvaluator& operator=(const TestEvaluator&) = delete;

  // The step that brought the job to `completed` steps ran from `start` to `end` with training
  // loss `loss`.
  void StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss);
  // Evaluates `params`, the parameters after `completed` steps, copied now: into the evaluator's
  // copy if it is free, else to disk to wait their turn. False (nothing copied, counted in
  // deferred()) when they cannot wait.
  bool OfferSnapshot(int64_t completed, absl::Span<const float> params);
  // Evaluates what `reader` reads, called on the evaluator's reader thread, if the evaluator is
  // free; false (counted in deferred()) while it reads or evaluates.
  bool OfferShardRead(int64_t completed, ShardReader reader);
  // Returns once nothing is being read, evaluated or waiting: every point taken so far is with the
  // sink, and the next offer is taken.
  void Drain();

  // Offers refused because the evaluator was busy and they could not wait.
  int64_t deferred() const;
  // Shard reads that found the shards at a step already evaluated (no second point).
  int64_t repeated() const;
  struct Failures {
    int64_t count = 0;
    absl::Status last;
  };
  Failures failures() const;

 private:
  // Where the parameters' copy is: free, filled by the reader thread, filled and waiting for the
  // compute thread, or being evaluated.
  enum class Stage { kFree, kReading, kFilled, kEvaluating };
  struct Taken {
    int64_t completed = 0;     // the step offered (a read replaces it with the shards' step)
    ShardReader reader;        // set while kReading
    absl::Duration read_time;  // the shard read's, once done
  };
  struct StepRecord {
    absl::Time end;
    double loss = 0;
  };

  TestEvaluator(const Dataset& test, std::unique_ptr<GradientComputer> computer, Sink sink,
                Options options);
  // Counts a failed read, evaluation or spill and keeps its error.
  void FailedLocked(absl::Status why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the copy is free and nothing waits for it.
  bool FreeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the copy for an offer (FreeLocked() holds).
  void TakeLocked(int64_t completed, Stage stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `params` to disk to wait for the copy; false when they cannot wait (counted).
  bool Spill(int64_t completed, absl::Span<const float> params) ABSL_LOCKS_EXCLUDED(mu_);
  std::string SpillPathLocked(int64_t completed) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills the copy from the snapshot of `completed` waiting on disk, and removes the file.
  absl::Status LoadSpilled(const std::string& path);
  void Loop();        // the compute thread
  void ReaderLoop();  // the reader thread: shard reads fill the copy
  // One evaluation of the copy; the point for the sink, or none when its step already has one.
  absl::StatusOr<std::optional<EvaluationLine>> Evaluate(const Taken& taken);
  // Reads the shards into the copy, retried while straddling; the step they hold.
  absl::StatusOr<int64_t> ReadShards(const Taken& taken);
  // `step`'s end, relative to the first step's start, and its loss (waiting for its report).
  absl::StatusOr<std::pair<double, double>> WhenAndLossOf(int64_t step);

  const Dataset& test_;
  const std::unique_ptr<GradientComputer> computer_;  // the compute thread's alone
  const Sink sink_;
  const Options options_;
  std::optional<int64_t> last_step_;  // of the last point: the compute thread's alone
  // The one copy of the parameters, allocated at the first offer taken: written by whoever moved
  // stage_ away from kFree (the offering trainer under mu_, or the reader thread in kReading), read
  // by the compute thread in kEvaluating.
  std::vector<float> params_;

  mutable absl::Mutex mu_;
  Stage stage_ ABSL_GUARDED_BY(mu_) = Stage::kFree;
  Taken taken_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> origin_ ABSL_GUARDED_BY(mu_);     // the first step's start
  std::map<int64_t, StepRecord> steps_ ABSL_GUARDED_BY(mu_);  // the newest kKeptSteps
  std::string spill_dir_ ABSL_GUARDED_BY(mu_);                // made at the first spill
  std::deque<int64_t> spilled_ ABSL_GUARDED_BY(mu_);          // snapshots waiting on disk, in order
  int64_t deferred_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t repeated_ ABSL_GUARDED_BY(mu_) = 0;
  Failures failures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::thread reader_thread_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_TEST_EVALUATOR_H_
