// Test accuracy during training, off the step's critical path. Rank 0's trainer tells the
// evaluator when each step ended (StepEnded: a few words under a lock) and, every `eval_every`
// steps, submits an evaluation: in ring mode a snapshot of its parameters, copied at the step
// boundary (every member holds the same); in ps mode a reader of the shards' own parameters,
// the authoritative copy, which the evaluator's reader thread calls at once (GetParameters, a
// transfer of milliseconds), so the training thread waits for neither the transfer nor the
// evaluation, and a read is never queued behind an evaluation (which would make ps points later
// than due). The evaluator's thread computes loss and accuracy on the held-out test set with its
// own gradient computer, at the lowest CPU priority (nice 19), and hands each point to the sink.
// Its time (the read's included) is the point's own `eval_seconds`, in no step's compute, sync or
// update phase.
//
// Points: `step` is the number of steps the evaluated parameters had completed (0: the initial
// ones); `seconds` when that step ended, since the start of the first step this evaluator was
// told about (the cluster's first step: every worker runs step 0 at once); `loss` that step's
// training loss as StepEnded reported it. The shards move on while they are read, so a ps point
// carries the step the shards held when read (all of them the same one: a read that straddles a
// step is read again), which can be a little later than the step it was submitted at.
//
// Snapshots wait in order while the evaluator is busy (at low priority beside the trainers it
// runs behind them, and catches up when they are done), up to Options::max_waiting_bytes of
// them (at least one); when that is full the newest waiting one is replaced (counted in
// dropped()), so the earliest points and the last are kept and memory stays bounded. One read
// waits while another reads (a newer one replaces it). A ps read that finds the shards at a step
// already evaluated gives no second point (also counted).
//
// Thread-safe: the trainer calls StepEnded/Submit*/Drain from its thread; the sink runs on the
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
#include "server/ps/shard_transfer.h"
#include "worker/dataset.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

class TestEvaluator {
 public:
  using Sink = std::function<void(const EvaluationLine&)>;
  // Reads the shards' parameters (server::ReadShardParameters with the generation's shards and
  // keys).
  using ShardReader = std::function<absl::StatusOr<server::ShardParameters>()>;

  struct Options {
    // A ps read that finds the shards on different steps is tried this many times in all.
    int read_attempts = 8;
    // How long a ps point waits for the trainer to report the step the shards held.
    absl::Duration step_report_timeout = absl::Seconds(60);
    // Rows per forward pass (EvaluateInChunks). Small, because OpenBLAS 0.3.21 runs a call's
    // work on one thread pool shared with the training thread (it has no per-thread thread
    // count): a short call holds the pool for a few milliseconds, not for a whole test set.
    int64_t chunk_rows = 256;
    // Snapshots waiting for the evaluator hold at most this many bytes of parameters (but at
    // least one snapshot): 8 of the heavy job's 7.1 MiB.
    size_t max_waiting_bytes = size_t{64} << 20;
  };

  // `test` must outlive the evaluator; `device` as MakeGradientComputer takes it. Starts the
  // thread.
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
  // Stops the thread: a waiting evaluation is dropped, a running one finishes first.
  ~TestEvaluator();
  TestEvaluator(const TestEvaluator&) = delete;
  TestEvaluator& operator=(const TestEvaluator&) = delete;

  // The step that brought the job to `completed` steps ran from `start` to `end` with training
  // loss `loss`.
  void StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss);
  // Evaluates `params`, the parameters after `completed` steps (copied now).
  void SubmitSnapshot(int64_t completed, absl::Span<const float> params);
  // Evaluates what `reader` returns, called on the evaluator's reader thread.
  void SubmitShardRead(int64_t completed, ShardReader reader);
  // Returns once nothing is waiting or running: every point submitted so far is with the sink.
  void Drain();

  int64_t dropped() const;
  struct Failures {
    int64_t count = 0;
    absl::Status last;
  };
  Failures failures() const;

 private:
  struct Request {
    int64_t completed = 0;
    std::vector<float> params;  // a snapshot, or empty with `reader` set
    ShardReader reader;
    absl::Duration read_time;  // the shard read's, once done
  };
  struct StepRecord {
    absl::Time end;
    double loss = 0;
  };

  TestEvaluator(const Dataset& test, std::unique_ptr<GradientComputer> computer, Sink sink,
                Options options);
  void Submit(Request request);
  void SubmitLocked(Request request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();        // the compute thread
  void ReaderLoop();  // the reader thread: shard reads become snapshots
  // One evaluation; on success the point for the sink, or none when its step already has one.
  absl::StatusOr<std::optional<EvaluationLine>> Evaluate(Request& request);
  // Reads `request`'s shards into its params, retried while straddling; the step they hold.
  absl::StatusOr<int64_t> ParametersOf(Request& request);
  // `step`'s end, relative to the first step's start, and its loss (waiting for its report).
  absl::StatusOr<std::pair<double, double>> WhenAndLossOf(int64_t step);

  const Dataset& test_;
  const std::unique_ptr<GradientComputer> computer_;  // the thread's alone
  const Sink sink_;
  const Options options_;
  std::optional<int64_t> last_step_;  // of the last point: the evaluator's thread's alone

  mutable absl::Mutex mu_;
  std::optional<Request> pending_read_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  const size_t capacity_;                             // snapshots that may wait
  std::deque<Request> pending_ ABSL_GUARDED_BY(mu_);  // snapshots, in submission order
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> origin_ ABSL_GUARDED_BY(mu_);     // the first step's start
  std::map<int64_t, StepRecord> steps_ ABSL_GUARDED_BY(mu_);  // the newest kKeptSteps
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  Failures failures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::thread reader_thread_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_TEST_EVALUATOR_H_
