// Test accuracy during training, off the step's critical path. Rank 0's trainer tells the
// evaluator when each step ended (StepEnded: a few words under a lock) and, every `eval_every`
// steps, offers it an evaluation: in ring mode a snapshot of its parameters, written to a file at
// the step boundary (every member holds the same); in ps mode a reader of the shards' own
// parameters, the authoritative copy, which the evaluator's reader thread calls at once
// (GetParameters, a transfer of milliseconds), so the training thread waits for neither the
// transfer nor the evaluation. The evaluator's thread computes loss and accuracy on the held-out
// test set at the lowest CPU priority (nice 19), and hands each point to the sink.
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
// Memory: none of the model. Every offer taken becomes a snapshot file of the parameters in the
// evaluator's directory (Options::snapshot_prefix): a ring snapshot written from the trainer's own
// parameters at once, a shard read written a segment at a time as it arrives. Snapshots wait
// there in order and are evaluated straight from their files by a streamed forward pass
// (worker/streamed_forward_pass.h: a block of weights and two layers' activations of a piece of
// the test set in memory), then removed. What the files hold is page cache, not the process's
// memory. Up to Options::max_snapshot_bytes wait (and always one, whatever the model's size); an
// offer beyond that, or a shard read while the last is still being read, is refused and nothing is
// written: the trainer offers again at its next step, so that point comes at the first step the
// evaluator can take it (counted in deferred()). The evaluation runs on the CPU whatever device
// trains.
//
// Thread-safe: the trainer calls StepEnded/Offer*/Drain from its thread; the sink runs on the
// evaluator's (compute) thread, one point at a time. An evaluation that fails (a shard unreachable,
// the shards never agreeing on a step, a file that cannot be written or read) is counted and its
// error kept (failures()), never fatal.
#ifndef RINGSIDE_WORKER_ACCURACY_EVALUATOR_H_
#define RINGSIDE_WORKER_ACCURACY_EVALUATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/cluster_files.h"
#include "worker/dataset.h"
#include "worker/gradient_computer.h"
#include "worker/streamed_forward_pass.h"

namespace ringside::worker {

class AccuracyEvaluator {
 public:
  using Sink = std::function<void(const EvaluationLine&)>;
  // Where read parameters go: `bytes` (whole floats) are parameters [offset, ...). Thread-safe,
  // for disjoint parameters (server::ValuesSink).
  using ValuesWriter = std::function<absl::Status(uint64_t offset, absl::string_view bytes)>;
  // Reads the shards' `count` parameters into the writer and returns the step they held
  // (server::ReadShardParameters with the generation's shards and keys).
  using ShardReader =
      std::function<absl::StatusOr<uint64_t>(uint64_t count, const ValuesWriter& write)>;

  struct Options {
    // A ps read that finds the shards on different steps is tried this many times in all.
    int read_attempts = 8;
    // How long a ps point waits for the trainer to report the step the shards held.
    absl::Duration step_report_timeout = absl::Seconds(60);
    // Rows per forward pass. Small, because OpenBLAS 0.3.21 runs a call's work on one thread pool
    // shared with the training thread (it has no per-thread thread count): a short call holds the
    // pool for a few milliseconds, not for a whole test set. Each pass reads the snapshot's file
    // once (from the page cache).
    int64_t chunk_rows = 256;
    // Snapshots wait and are evaluated in a directory `<snapshot_prefix>XXXXXX`, made at the first
    // offer and removed with the evaluator; empty: `ringside-evaluation-` in the system's
    // temporary directory ($TMPDIR, else /tmp).
    std::string snapshot_prefix;
    // The most bytes of snapshots on disk (waiting, being read or evaluated); one snapshot is
    // always allowed.
    uint64_t max_snapshot_bytes = uint64_t{1} << 30;
  };

  // `test` must outlive the evaluator. Starts the threads; the snapshot directory is made at the
  // first offer.
  static absl::StatusOr<std::unique_ptr<AccuracyEvaluator>> Create(const ModelSpec& spec,
                                                                   const Dataset& test, Sink sink,
                                                                   Options options);
  static absl::StatusOr<std::unique_ptr<AccuracyEvaluator>> Create(const ModelSpec& spec,
                                                                   const Dataset& test, Sink sink) {
    return Create(spec, test, std::move(sink), Options());
  }
  // Stops the threads: a read or an evaluation in progress finishes first, snapshots not yet
  // evaluated are dropped; their files and the directory are removed.
  ~AccuracyEvaluator();
  AccuracyEvaluator(const AccuracyEvaluator&) = delete;
  AccuracyEvaluator& operator=(const AccuracyEvaluator&) = delete;

  // The step that brought the job to `completed` steps ran from `start` to `end` with training
  // loss `loss`, and this worker had sent `sent_bytes` on its links by its end (the point's
  // sent_bytes; -1: not counted).
  void StepEnded(int64_t completed, absl::Time start, absl::Time end, double loss,
                 int64_t sent_bytes = -1);
  // Evaluates `params`, the parameters after `completed` steps, written to a snapshot file now.
  // False (nothing written, counted in deferred()) when the disk budget is spent or the file
  // cannot be written (also counted in failures()).
  bool OfferSnapshot(int64_t completed, absl::Span<const float> params);
  // Evaluates what `reader` reads, called at once on the evaluator's reader thread into a
  // snapshot file; false (counted in deferred()) while the last read is in progress or the disk
  // budget is spent.
  bool OfferShardRead(int64_t completed, ShardReader reader);
  // Returns once nothing is being read, evaluated or waiting: every point taken so far is with the
  // sink.
  void Drain();

  // Offers refused because they could not be taken when due.
  int64_t deferred() const;
  // Snapshots of a step at or before one already taken (a shard read that found the shards where
  // the last one did): no second point.
  int64_t repeated() const;
  struct Failures {
    int64_t count = 0;
    absl::Status last;
  };
  Failures failures() const;

 private:
  // A snapshot file: the parameters after `completed` steps.
  struct Snapshot {
    int64_t completed = 0;
    std::string path;
    absl::Duration read_time;  // a shard read's (part of the point's eval_seconds)
  };
  struct StepRecord {
    absl::Time end;
    double loss = 0;
    int64_t sent_bytes = -1;
  };
  // What a point says of its step besides the evaluation.
  struct StepFacts {
    double seconds = 0;  // its end, relative to the first step's start
    double loss = 0;
    int64_t sent_bytes = -1;
  };

  AccuracyEvaluator(const ModelSpec& spec, const Dataset& test, Sink sink, Options options);
  uint64_t SnapshotBytes() const { return pass_.spec().parameter_count() * sizeof(float); }
  // Counts a failed read, evaluation or snapshot and keeps its error.
  void FailedLocked(absl::Status why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reserves room for one more snapshot file (the directory made if need be); false (counted)
  // when there is none.
  bool ReserveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a written snapshot, or drops it (file and reservation) when its step is taken already.
  void QueueLocked(Snapshot snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back a reservation, removing its file at `path` (none when empty).
  void ReleaseLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string PathLocked(absl::string_view name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();        // the compute thread
  void ReaderLoop();  // the reader thread: shard reads into snapshot files
  // Evaluates one snapshot; the point for the sink.
  absl::StatusOr<EvaluationLine> Evaluate(const Snapshot& snapshot);
  // Reads the shards into a new file at `path`, retried while straddling; the step they hold. On
  // failure the file is gone (or was never made: one at `path` already is left alone).
  absl::StatusOr<int64_t> ReadShards(int64_t completed, const ShardReader& reader,
                                     const std::string& path);
  // `step`'s facts (waiting for its report).
  absl::StatusOr<StepFacts> FactsOf(int64_t step);

  const Dataset& test_;
  const Sink sink_;
  const Options options_;
  StreamedForwardPass pass_;  // the compute thread's alone

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> origin_ ABSL_GUARDED_BY(mu_);     // the first step's start
  std::map<int64_t, StepRecord> steps_ ABSL_GUARDED_BY(mu_);  // the newest kKeptSteps
  std::string dir_ ABSL_GUARDED_BY(mu_);                      // made at the first offer
  int64_t files_ ABSL_GUARDED_BY(mu_) = 0;                    // snapshots on disk or being written
  std::deque<Snapshot> waiting_ ABSL_GUARDED_BY(mu_);         // written, in step order
  std::optional<int64_t> newest_ ABSL_GUARDED_BY(mu_);        // the newest step queued
  bool evaluating_ ABSL_GUARDED_BY(mu_) = false;
  // The shard read taken and not finished, for the reader thread.
  std::optional<std::pair<int64_t, ShardReader>> read_ ABSL_GUARDED_BY(mu_);
  int64_t deferred_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t repeated_ ABSL_GUARDED_BY(mu_) = 0;
  Failures failures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::thread reader_thread_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_ACCURACY_EVALUATOR_H_
