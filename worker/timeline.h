// A worker's timeline: what each step spent in compute, sync and update, and when the worker
// regrouped, kept in a fixed-capacity ring buffer (the oldest events are dropped and counted),
// and written as Chrome trace JSON ("Trace Event Format", which chrome://tracing and
// ui.perfetto.dev open), like Horovod Timeline.
//
// A trace file holds one or more processes (`TimelineProcess`): `ringside-worker
// --timeline_file` writes its own, with pid = its rank; `ringside compare --timeline` reads
// every worker's file back (ParseChromeTrace) and writes them all as one trace, each with a pid
// of its own. In the file every event is a complete event ("ph":"X") with ts and dur in
// microseconds, tid = the phase's lane (TimelineLane), and args {step, generation, mode};
// metadata events ("ph":"M") name every process and lane; `otherData.dropped_events` counts
// what the ring buffers dropped.
//
// Size: a Timeline holds at most `capacity` events (4 per step: the step and its three
// phases), about 150 bytes each in the file, so a worker's file stays under capacity × 150
// bytes however long the job.
//
// Thread-safety: Timeline is thread-safe (the trainer records, the daemon writes). The free
// functions are pure. Errors: ParseChromeTrace returns INVALID_ARGUMENT naming what is wrong,
// never throws; the writer returns WriteFileAtomically's status.
#ifndef RINGSIDE_WORKER_TIMELINE_H_
#define RINGSIDE_WORKER_TIMELINE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"

namespace ringside::worker {

// One lane (trace tid) per kind of event. A step's phases follow each other in its lane order.
enum class TimelineLane { kStep = 0, kCompute = 1, kSync = 2, kUpdate = 3, kRegroup = 4 };
absl::string_view TimelineLaneName(TimelineLane lane);  // "step", "compute", ...

struct TimelineEvent {
  TimelineLane lane = TimelineLane::kStep;
  int64_t start_us = 0;     // microseconds since the Unix epoch
  int64_t duration_us = 0;  // >= 0
  int64_t step = 0;         // the step (regroups: the completed steps at the regroup)
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
};

// The phases of one step as the step loop measured them (worker/data_parallel.h's TrainStep):
// from `start`, compute, then sync, then update, back to back, except that an overlapped step's
// sync (--bucket_bytes, worker/overlapped_sync.h) began `overlap` before the compute ended. The
// step's time is compute + the sync's part after it + update; without overlap, their sum, as in
// ringside_step_seconds.
struct StepTiming {
  absl::Time start;
  absl::Duration compute, sync, update;
  // How long before the compute's end the sync began; >= 0.
  absl::Duration overlap = absl::ZeroDuration();
  // The sync's part after the compute (all of it without overlap).
  absl::Duration sync_after_compute() const {
    return std::max(absl::ZeroDuration(), sync - overlap);
  }
  // How long compute and sync ran at the same time.
  absl::Duration concurrent() const { return std::min(overlap, sync); }
  absl::Duration total() const { return compute + sync_after_compute() + update; }
};

class Timeline {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  explicit Timeline(size_t capacity = kDefaultCapacity);

  // Four events: the step on its lane and each phase on its own, back to back (an overlapped
  // step's sync begins `overlap` before the compute's end, so the compute and sync lanes
  // overlap). Each duration is rounded to microseconds once and the step's is made of the rounded
  // phases, so the phases add up to the step exactly in the file.
  void RecordStep(int64_t step, uint64_t generation, SyncMode mode, const StepTiming& timing);
  void RecordRegroup(int64_t completed_steps, uint64_t generation, SyncMode mode, absl::Time start,
                     absl::Duration duration);

  std::vector<TimelineEvent> Events() const;  // oldest first
  uint64_t dropped() const;
  size_t capacity() const { return capacity_; }

 private:
  void Add(const TimelineEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<TimelineEvent> events_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// One process of a trace file: a worker's events under `pid`, named `name` in the viewer.
struct TimelineProcess {
  int pid = 0;
  std::string name;  // e.g. "worker-2" or "ring N=4: worker-2"
  std::vector<TimelineEvent> events;
  uint64_t dropped = 0;
};

// The Chrome trace JSON of `processes`; every ts is shifted by -origin_us (0: Unix epoch), so
// a merged trace starts near 0.
std::string ChromeTraceText(const std::vector<TimelineProcess>& processes, int64_t origin_us = 0);
// Reads a file ChromeTraceText wrote (unshifted): every process with its events and dropped
// count (the file's total is credited to its first process).
absl::StatusOr<std::vector<TimelineProcess>> ParseChromeTrace(absl::string_view text);

// ChromeTraceText({{rank, "worker-<rank>", timeline's events, dropped}}) written atomically.
absl::Status WriteWorkerTimeline(const Timeline& timeline, int rank, const std::string& path);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_TIMELINE_H_
