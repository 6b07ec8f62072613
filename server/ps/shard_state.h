// One parameter-server shard's state machine, without any transport (ps_service.h adapts it to
// gRPC). The shard owns a contiguous range of the flat parameter vector and the optimiser state
// for it. Step t is summed, applied and answered segment by segment, streaming: as soon as every
// worker of the generation has pushed the elements [b, e) of its share of step t, those elements
// of the shares are summed in rank order (deterministic, whatever order they arrived in) and the
// shared optimiser (common/optimizer.h, elementwise) updates [b, e) of the range; the workers are
// answered with that part of the sum (published before the shard's own update of [b, e)) while
// the rest of the step is still arriving, so a step's pushes and replies overlap on the shard's
// (full-duplex) link. The bits are those of summing and updating the whole range at once. Workers
// pre-scale their shares by the global batch size, so the sum is the mean gradient of the global
// batch. Each worker applies the same optimiser to the sum, so every worker holds the whole job's
// state and the shard's copy (the live model, GetParameters) is never the only one: a lost shard
// loses nothing.
//
// Whole or nothing. A share counts once every element of it has arrived (the half-close,
// FinishPush, only confirms it). The step is complete, and the next one collected, when every
// share is. Readers (ReadApplied, applied(), WhenApplied) see only whole steps. A push abandoned
// before any part of its step was summed is forgotten and may be made again; one abandoned after
// (a worker lost mid-step) loses the step on this shard: its remaining segments can never be
// summed, every stream still waiting on it is answered ABORTED, it is never published, and the
// generation must regroup (the regroup loads the shards from the most advanced worker, which
// never applied the lost step).
//
// Threads. The push calls (BeginPush, AddSegment, FinishPush) run on the caller's thread, gRPC's
// callback threads in the service, and only validate and keep: a segment's payload stays in the
// slices it was received in (AddSegment takes their owner), and the push that completes a segment
// of every share hands those payloads to the shard's applier thread (one, started by the
// constructor and joined by the destructor) and returns at once. The applier decodes and sums
// straight from them without the lock, so pushes, reads and Close() never wait for the
// arithmetic, and publishes that part of the sum (the replies' next writes) in one short
// critical section before it runs the optimiser on the segment of its own copy of the range,
// which no worker waits for; at the step's last segment it then publishes the step count. Shares of
// step t+1 may be collected while step t's tail is applied: their payloads are kept apart, by step.
// Callbacks registered with WhenApplied, WhenSummed or ReadApplied run outside the lock on the
// applier thread (or on the caller's, when the answer is already known or the state closed). One of
// them may drop the last reference to the state: the destructor then runs on the applier thread and
// lets it end by itself (server/ps/applier_thread.h).
//
// Memory: the range's parameters and optimiser state, and what does not grow with the range: the
// payloads received and not yet summed (at most kHeldShareElements of each share, refused past
// it) and kSumBufferElements of the sum. No share is copied: a share's memory is its received
// slices, released once summed, so larger segments (fewer messages) cost no more. The parameters
// are not copied, not at each step nor for a reader: a read (ReadInPlace: GetParameters, a rare
// read) takes them from the live range, and the applier saves for it only what it overwrites before
// the read has taken it (ParameterRead, at most kMaxReadSavedBytes). The sum's slots are summed
// into again once every reply has taken them (Answered; a push further ahead of its answers is
// refused). A step's sum is kept until every worker has begun the next step's push (which none does
// before it has the whole sum); the next step is then summed into the same buffer unless a reply
// still holds it.
//
// Wire dtype (common/wire_dtype.h). A step's pushes carry its gradients as fp32, fp16 or bf16,
// all alike (the first push of a step sets it; another is INVALID_ARGUMENT). Each segment is
// decoded into float32 as it arrives and the shares are summed in float32, in rank order as
// ever; with a 16-bit type the sum is then rounded to the wire type (what the replies carry,
// encoded once), and the optimiser takes that rounded sum, multiplied by the worker count for
// fp16 (whose shares the workers divided by it: server/ps/wire_share.h), so the shard updates its
// range with exactly the values every worker decodes and applies. fp32: the bits of before.
//
// Compression (--compression: top-k or sign; server/ps/compressed_exchange.h says the exchange).
// A step's first push also sets its codec, or none; a compressed step is float32 and ascending,
// and its segments are cut at one length, the step's first segment's (the range's last piece
// excepted). Each compressed segment is decoded once as it arrives (AddCompressedSegment: the
// payload checked whole first) and kept as float32, then summed in rank order as ever; the
// applier then encodes each segment's sum with the codec under the shard's own error feedback
// (ShardCompression: one residual over the range, kept from step to step while the codec stays
// the same, new with the state, so reset at every regroup) and replaces the sum with that
// encoding decoded, which its optimiser applies; every reply sends the encoding (Summed.encoded),
// made once for all workers, so the shard and every worker apply the same bits.
//
// Thread-safe.
// Errors: FAILED_PRECONDITION for a stale generation or a step that is not the current one;
// ABORTED for a step lost on this shard (above); INVALID_ARGUMENT for an unknown rank, a range
// length that does not match, a segment out of sequence, ragged or too long, an incomplete
// share, or a descending push in a step pushed ascending (or back);
// ALREADY_EXISTS for a second push of the same step by the same worker; RESOURCE_EXHAUSTED for a
// segment that would hold more of a share unsummed than ShardConfig::held_share_elements. A refused
// push changes nothing.
#ifndef RINGSIDE_SERVER_PS_SHARD_STATE_H_
#define RINGSIDE_SERVER_PS_SHARD_STATE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/compression.h"
#include "common/optimizer.h"
#include "common/wire_dtype.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "server/ps/applier_thread.h"
#include "server/ps/compressed_exchange.h"
#include "server/ps/push_check.h"
#include "server/ps/received_share.h"
#include "server/ps/wire_share.h"

namespace ringside::server {

// How many elements of each worker's share a shard holds received and not yet summed (as
// received: 5 MiB of 16-bit or 10 MiB of fp32 elements at most), and how many of the step's sum
// it keeps (10 MiB of floats, allocated up to the range's size): the sum's element i at slot i
// mod this (ForEachRingRun). The sum's elements summed and not yet sent to every worker always
// form one interval of the range (in either push order), so they never share a slot. A push that
// would hold more of either is refused. The worker's push window (PsClientOptions::window_bytes,
// at most kMaxPsWindowBytes) keeps it within: 1.25 windows of 16-bit elements (shard_state.cc
// checks it).
inline constexpr uint64_t kHeldShareElements = uint64_t{2560} << 10;
inline constexpr uint64_t kSumBufferElements = uint64_t{2560} << 10;

struct ShardConfig {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
  uint64_t held_share_elements = kHeldShareElements;  // tests make these small
  uint64_t sum_buffer_elements = kSumBufferElements;
};

// Elements [begin, end) of a ring of `slots` slots (element i at slot i mod slots): calls
// run(element, slot, length) for each piece between wraps.
template <typename Run>
void ForEachRingRun(uint64_t begin, uint64_t end, uint64_t slots, Run run) {
  while (begin < end) {
    const uint64_t slot = begin % slots;
    const uint64_t length = std::min(end - begin, slots - slot);
    run(begin, slot, length);
    begin += length;
  }
}

// Null members are not recorded.
struct ShardStepMetrics {
  prometheus::Histogram* wait_seconds = nullptr;    // first push begun -> last share complete
  prometheus::Histogram* update_seconds = nullptr;  // summing and the optimiser, all segments
  prometheus::Counter* steps = nullptr;
  NonFiniteReport nonfinite;
};

// Float32 values of the shard's range, shared with the replies that stream them.
using Values = std::shared_ptr<const std::vector<float>>;

// A compressed step's codec, as its first push named it.
struct StepCodec {
  Compression compression;
  std::string text;  // CompressionText: what the replies name
  std::unique_ptr<GradientCodec> codec;
};

// A compressed step's reply, segment by segment, encoded once by the applier for every worker:
// entry i holds elements [i·L, min((i + 1)·L, range)) (L = segment_elements), written before the
// sum that covers it is published and never changed after.
struct EncodedReply {
  std::shared_ptr<const StepCodec> codec;
  uint64_t segment_elements = 1;
  std::vector<std::string> segments;
};

// How far a step's sum is known: its elements [0, end) are final and will not change (the
// applier writes only past `end`); of a step pushed descending, its last `end` elements. `sum`
// holds element i at slot i mod sum->size() (ForEachRingRun): the whole range when it fits
// ShardConfig::sum_buffer_elements, else the applier reuses a slot once every worker's reply has
// sent what it held (ShardState::Answered). `sum` is null when the step will never be answered
// here (`ended` says why: the state closed, or the step lost on this shard).
struct Summed {
  Values sum;
  uint64_t end = 0;
  absl::Status ended;
  // A compressed step's: what the replies send instead of `sum`'s values; null otherwise.
  std::shared_ptr<const EncodedReply> encoded = nullptr;
};

class ShardState {
 public:
  // `initial` is the shard's range of the initial parameters.
  static absl::StatusOr<std::unique_ptr<ShardState>> Create(ShardConfig config,
                                                            std::vector<float> initial,
                                                            const OptimizerConfig& optimizer,
                                                            ShardStepMetrics metrics = {});
  // A shard that continues a job: `step` steps applied, `values` the range's parameters after
  // them and `optimizer_state` the range's optimiser state (Optimizer::ExportState layout).
  static absl::StatusOr<std::unique_ptr<ShardState>> Restore(
      ShardConfig config, uint64_t step, std::vector<float> values,
      absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
      ShardStepMetrics metrics = {});
  // The same with the range's optimiser already holding its state (a load imports it as it
  // arrives): INVALID_ARGUMENT unless it is of the range's size and has taken `step` steps.
  static absl::StatusOr<std::unique_ptr<ShardState>> Restore(ShardConfig config, uint64_t step,
                                                             std::vector<float> values,
                                                             Optimizer optimizer,
                                                             ShardStepMetrics metrics = {});
  // Stops the applier: segments handed over and not yet applied are dropped, one being applied
  // is finished first (unless this runs on the applier thread itself, from a callback).
  ~ShardState();
  ShardState(const ShardState&) = delete;
  ShardState& operator=(const ShardState&) = delete;

  // The shard moves to another generation: every waiter is answered with a null sum (its stream
  // ends ABORTED), pushes are refused and nothing more is applied. Does not wait for a segment
  // being applied.
  void Close();

  // `descending`: the share's segments come last first (PsPush.descending); then every count
  // here and in Summed (`end`, `after`, how much is final) is of elements from the range's end.
  // `compression`: the step's codec (PsPush.compression), kNone for none; a compressed push must
  // be float32, ascending and of a range that is not empty (INVALID_ARGUMENT otherwise).
  absl::Status BeginPush(uint64_t generation, int worker, uint64_t step, uint64_t range_elements,
                         WireDtype dtype = WireDtype::kFp32, bool descending = false,
                         const Compression& compression = {});
  // Keeps a segment (elements of the step's wire dtype) until it is summed; the one that completes
  // a segment of every share hands it to the applier. A segment with a NaN or an infinity is
  // refused (INVALID_ARGUMENT, NonFiniteReport) and nothing of it kept: the push is then open
  // as before it, and its stream's end abandons it (AbandonPush). `pieces`: the payload's bytes in
  // order (the received slices: common/payload_codec.h), kept valid by `owner` for as long as it is
  // held.
  absl::Status AddSegment(int worker, uint64_t step, uint64_t offset,
                          std::vector<absl::string_view> pieces, std::shared_ptr<const void> owner);
  // The same with a copy of `payload` (tests).
  absl::Status AddSegment(int worker, uint64_t step, uint64_t offset, absl::string_view payload);
  // A compressed step's segment: `elements` elements from `offset`, encoded in `pieces` by the
  // step's codec. Decoded once, here, after the payload is checked whole (INVALID_ARGUMENT naming
  // what is wrong, and nothing kept: indices out of the segment, repeated or unsorted, a count
  // the size disagrees with, a value not finite), then kept as float32 as AddSegment keeps a
  // segment. INVALID_ARGUMENT too for a segment of another length than the step's (above), and
  // for either call in a step of the other kind.
  absl::Status AddCompressedSegment(int worker, uint64_t step, uint64_t offset, uint64_t elements,
                                    absl::Span<const absl::string_view> pieces);
  // The worker says its share is complete: INVALID_ARGUMENT unless every element has arrived.
  // OK for a step already complete here (every share of it was).
  absl::Status FinishPush(int worker, uint64_t step);
  // Forgets a push that will not be completed (its stream broke); loses the step if part of it
  // was summed already (see above). No-op if none is open or the share is complete.
  void AbandonPush(int worker, uint64_t step);
  // The reply to `worker` has taken `sent` elements of step `step`'s sum (counted as the push
  // is), to be written next: their slots may be summed into again. A push that would hold more of
  // its step's sum unsent than the sum's buffer is refused (AddSegment).
  void Answered(int worker, uint64_t step, uint64_t sent);

  // Runs `done` with step `step`'s summed gradient once the whole step has been applied
  // (nullptr once the state is closed or the step lost).
  void WhenApplied(uint64_t step, std::function<void(Values)> done);
  // Runs `done` once more than `after` elements of step `step`'s sum are final, or the whole
  // step is applied (then `end` is the range's length), or the step will never be answered. A
  // step older than the last applied one is answered with a null sum.
  void WhenSummed(uint64_t step, uint64_t after, std::function<void(Summed)> done);

  // A read of the parameters after step() applied steps that copies none of them up front
  // (GetParameters streams one): CopyTo copies them piece by piece, front to back, as they were
  // after that step, while the applier goes on with the next. Before the applier overwrites a
  // piece that no CopyTo has taken yet, in the step after the read's, it saves that piece for
  // the read (copy on write) and the read takes it from there; from the step after on, nothing
  // untaken is left to save. A read that keeps up with its reply saves little or nothing; one that
  // falls a whole step behind would hold a copy of the range, so past kMaxReadSavedBytes saved it
  // is aborted instead (read again). Thread-safe.
  class ParameterRead {
   public:
    static constexpr uint64_t kMaxReadSavedBytes = uint64_t{4} << 20;
    static constexpr uint64_t kMaxReadSavedElements = kMaxReadSavedBytes / sizeof(float);

    uint64_t step() const { return step_; }
    uint64_t size() const { return size_; }
    // Elements [offset, offset + out.size()), continuing the last CopyTo (the first from 0).
    // ABORTED once the read was aborted (too much saved, or the state destroyed: its message
    // says which); INVALID_ARGUMENT out of order or past size().
    absl::Status CopyTo(uint64_t offset, absl::Span<float> out);

   private:
    friend class ShardState;
    ParameterRead(uint64_t step, const std::vector<float>* live)
        : step_(step), size_(live->size()), live_(live) {}
    // The applier is about to overwrite [begin, end) in the step after step_.
    void SaveBefore(uint64_t begin, uint64_t end);
    // That step is applied: everything not taken is saved; the live values are not read again.
    void Complete();
    void Abort(absl::Status why);

    const uint64_t step_;
    const uint64_t size_;
    absl::Mutex mu_;
    const std::vector<float>* live_ ABSL_GUARDED_BY(mu_);  // the state's; null once not read
    uint64_t taken_ ABSL_GUARDED_BY(mu_) = 0;              // [0, taken_) copied out
    // Saved pieces, by first element: disjoint, each at or past taken_ when saved.
    std::map<uint64_t, std::vector<float>> saved_ ABSL_GUARDED_BY(mu_);
    uint64_t saved_elements_ ABSL_GUARDED_BY(mu_) = 0;
    absl::Status aborted_ ABSL_GUARDED_BY(mu_);
  };
  using Read = std::shared_ptr<ParameterRead>;
  // Runs `done` with a read of the parameters after the last whole step: at once when no step is
  // part-way applied, else once the step being applied ends. ABORTED when that step is lost here
  // (the parameters are then part-way through it) or the state is closed first.
  void ReadInPlace(std::function<void(absl::StatusOr<Read>)> done);

  // The parameters after `step` applied steps, read together.
  struct Applied {
    uint64_t step = 0;
    Values values;
  };
  // ReadInPlace, copied whole into `values`.
  void ReadApplied(std::function<void(absl::StatusOr<Applied>)> done);
  // ReadApplied, waiting for the answer: blocks while a step is part-way applied, so not for a
  // gRPC callback thread or a callback of this state.
  absl::StatusOr<Applied> applied();
  absl::StatusOr<Values> parameters();  // applied()'s values
  uint64_t current_step() const;        // steps applied so far
  uint64_t range_elements() const { return range_elements_; }
  const ShardConfig& config() const { return config_; }
  const PushCheck& check() const { return check_; }

 private:
  // Runs on the applier thread for every segment [begin, end) of a step it applies, after the
  // segment is summed and before its sum is published and the optimiser updates it, without the
  // lock. Set by tests only,
  // through tests/support/ps_test_hooks.h (a friend), to hold a step half-applied; null: none.
  using ApplyHook = std::function<void(uint64_t step, uint64_t begin, uint64_t end)>;
  friend class PsTestHooks;

  // Elements [begin, end) of every share of `step` are in: the applier's next piece of work.
  struct Segment {
    uint64_t step = 0;
    uint64_t begin = 0;
    uint64_t end = 0;
    bool last = false;   // the step's last segment: every share is complete
    uint64_t known = 0;  // elements of the step's sum final with this segment (in push order)
    WireDtype dtype = WireDtype::kFp32;      // how the step's values travel
    std::shared_ptr<const StepCodec> codec;  // a compressed step's; null: none
    uint64_t codec_segment = 0;              // its segment length
    // By rank, the share's payloads that hold [begin, end), in range order.
    std::vector<HeldPayloads> held;
    absl::Time first_push;  // last: first push begun
    absl::Time last_push;   // last: last share complete
  };
  // The last whole step.
  struct Published {
    uint64_t step = 0;  // steps applied
    // The summed gradient of step `step - 1`; null before any step, and once the applier took its
    // buffer for step `step` (every worker has begun that step, so none reads this one again).
    Values sum;
    std::shared_ptr<const EncodedReply> encoded;  // that step's, when compressed
  };
  // The step the applier is part-way through: [0, end) of its sum is final.
  struct Partial {
    uint64_t step = 0;
    Values sum;  // null when no step is part-way
    uint64_t end = 0;
    std::shared_ptr<const EncodedReply> encoded;  // when compressed
  };
  struct Waiter {
    uint64_t step = 0;
    uint64_t after = 0;
    std::function<void(Summed)> done;
  };
  using Waiters = std::vector<Waiter>;
  using Reader = std::function<void(absl::StatusOr<Read>)>;
  using ReadyCallbacks = std::vector<std::pair<std::function<void(Summed)>, Summed>>;

  ShardState(ShardConfig config, uint64_t step, std::vector<float> values, Optimizer optimizer,
             ShardStepMetrics metrics);
  absl::Status CheckStep(uint64_t step) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A step's first push sets its wire dtype and order; every later one must match them.
  absl::Status AgreeOnDtypeLocked(int worker, WireDtype dtype, bool descending,
                                  const Compression& compression)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AddSegment's and AddCompressedSegment's keeping of a segment of `bytes` bytes in the step's
  // wire dtype; `compressed`: float32 decoded from a compressed one.
  absl::Status KeepSegment(int worker, uint64_t step, uint64_t offset, uint64_t bytes,
                           bool compressed, std::vector<absl::string_view> pieces,
                           std::shared_ptr<const void> owner);
  // The compressed step's segment length: set by its first segment, then every one must match.
  absl::Status AgreeOnSegmentLocked(int worker, uint64_t offset, uint64_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the segment every share now covers to the applier; at the step's end, starts the
  // next step.
  void HandOverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // By rank, the payloads that hold elements [from, to) of the step (in push order), in range
  // order; those wholly below `to` are no longer kept by the shares.
  std::vector<HeldPayloads> HandHeldLocked(uint64_t from, uint64_t to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The collected step went to the applier whole: collecting starts on the next one.
  void CollectNextStepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What `waiter` is answered now, or nothing yet.
  std::optional<Summed> AnswerLocked(const Waiter& waiter) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes and returns the waiters that have their answer now.
  ReadyCallbacks ReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether values_ holds the parameters after current_.step: no step is part-way applied.
  bool BetweenStepsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why a reader gets no parameters now (the state closed, the step lost), or OK.
  absl::Status UnreadableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers each of `readers` (taken from readers_) with `why` they get no read.
  static void RefuseReaders(std::vector<Reader> readers, const absl::Status& why);
  // A read of values_ as they are now (between steps), registered for the applier.
  Read NewReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The registered reads of `step` (the applier is in the step after theirs); with `remove`,
  // no longer registered.
  std::vector<Read> ReadsOfLocked(uint64_t step, bool remove) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The buffer for a new step's sum: the last step's when no reply holds it any more.
  std::shared_ptr<std::vector<float>> SumBufferLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LostStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The applier thread: waits for a segment, applies it, publishes it, runs its callbacks.
  void ApplyLoop(const ApplierThread::Liveness& liveness);
  // Sums the segment in rank order into sum_ (rounded to the wire dtype: what the replies carry),
  // without the lock.
  void Sum(const Segment& segment, bool begins_step, const ApplyHook& hook);
  // A compressed step: each of the segment's codec segments summed, encoded under the shard's
  // error feedback into encoded_, and its sum replaced by that encoding decoded (what the
  // optimiser applies). Without the lock (shard_reply_codec.cc).
  void EncodeReplies(const Segment& segment, bool begins_step);
  // The segment's sum is final: answers the waiters it completes (the workers' replies).
  void PublishSum(const Segment& segment) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the optimiser on the segment of the applier's own copy of the range, without the lock.
  void Step(const Segment& segment);
  // The segment is applied; at the step's last one, publishes the step (count, parameters).
  void PublishStep(Segment& segment) ABSL_LOCKS_EXCLUDED(mu_);

  const ShardConfig config_;
  const uint64_t range_elements_;
  const uint64_t held_elements_;  // of each share, at most: min(range, config), at least 1
  const uint64_t sum_elements_;   // of the sum: min(range, config); none for an empty range
  const ShardStepMetrics metrics_;
  const PushCheck check_;  // the generation, worker, range and finiteness of every push
  mutable absl::Mutex mu_;
  absl::CondVar segment_ready_;  // signalled when segments_ gains one, or on stopping_

  // The collecting side: shares of step `collecting_`, filled by the pushing threads.
  uint64_t collecting_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<ReceivedShare> shares_ ABSL_GUARDED_BY(mu_);  // by rank
  // By rank, elements of the step's sum its reply has taken (Answered).
  std::vector<uint64_t> answered_ ABSL_GUARDED_BY(mu_);
  uint64_t handed_ ABSL_GUARDED_BY(mu_) = 0;  // elements of the step handed to the applier
  bool lost_ ABSL_GUARDED_BY(mu_) = false;    // step collecting_ can never complete here
  // The wire dtype of step collecting_: set by its first push, while no share has begun.
  WireDtype dtype_ ABSL_GUARDED_BY(mu_) = WireDtype::kFp32;
  bool descending_ ABSL_GUARDED_BY(mu_) = false;  // step collecting_'s order, likewise
  std::shared_ptr<const StepCodec> codec_ ABSL_GUARDED_BY(mu_);       // and its codec; null: none
  std::shared_ptr<const StepCodec> last_codec_ ABSL_GUARDED_BY(mu_);  // the last one made
  uint64_t codec_segment_ ABSL_GUARDED_BY(mu_) = 0;  // its segment length; 0: none pushed yet
  int lost_worker_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time first_push_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::deque<Segment> segments_ ABSL_GUARDED_BY(mu_);  // handed to the applier, in order

  // What readers see: the state after the last applied step, and the next step's progress.
  Published current_ ABSL_GUARDED_BY(mu_);
  Partial partial_ ABSL_GUARDED_BY(mu_);
  Waiters waiters_ ABSL_GUARDED_BY(mu_);
  std::vector<Reader> readers_ ABSL_GUARDED_BY(mu_);  // ReadInPlace, until the step's end
  std::vector<std::weak_ptr<ParameterRead>> reads_ ABSL_GUARDED_BY(mu_);  // being read
  bool applying_ ABSL_GUARDED_BY(mu_) = false;  // the applier holds a segment
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  ApplyHook apply_hook_ ABSL_GUARDED_BY(mu_);

  // The applier thread's alone once constructed (a ParameterRead reads values_ under its lock, and
  // the applier saves what it overwrites for it first): the range's parameters and its optimiser,
  // and the sum of the step it is applying.
  Optimizer optimizer_;
  std::vector<float> values_;
  std::shared_ptr<std::vector<float>> sum_;
  std::vector<float> scaled_;  // fp16: a segment's sum times the worker count, for the optimiser
  // Compressed steps: the shard's error feedback (with the codec it was made for, which it
  // refers to), the step's encodings being made, and a codec segment's sum and its decoding.
  std::shared_ptr<const StepCodec> feedback_codec_;
  std::optional<ShardCompression> feedback_;
  std::shared_ptr<EncodedReply> encoded_;
  std::vector<float> codec_sum_, codec_applied_;
  absl::Duration update_time_;  // this step's arithmetic so far
  ApplierThread applier_;       // last: starts once everything above is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SHARD_STATE_H_
