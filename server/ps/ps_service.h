// The ParameterShard gRPC service (proto/ps.proto says the protocol), the adapter of one Shard
// per generation (server/ps/shard.h), whatever its consistency. One small reactor per push stream
// (server/ps/push_stream_reactor.h): a Step stream (ps_step_stream.cc) for a shard of synchronous
// steps validates and stores segments as they are read and, at the same time, streams the step's
// sum back as the shard makes each part of it final (ShardState: a part is summed once every
// worker's share covers it), so a step's pushes and replies overlap on the link; a stream
// cancelled before its share is complete abandons it (ShardState says what that costs the step);
// a worker whose whole share arrived and then disappears still counts for the step. A PushPull
// stream (ps_push_pull_stream.cc) serves a push-pull shard. Each refuses the other mode's
// generation (FAILED_PRECONDITION).
//
// What the shard serves is one ShardGeneration at a time. A static shard (ringside-ps --workers)
// is given its only one at start; an elastic shard (--controller) learns the job's shape from the
// controller (SetJob) and gets each generation's state from a worker's Load, which replaces the
// generation whole: steps still waiting on the old one end ABORTED, never half-applied. The
// worker and the shard learn of a generation on separate watch streams, in no set order, so a
// Load of a generation the shard has no assignment of yet waits for it (within the Load's own
// deadline, holding its first segment only) instead of being refused.
// Thread-safe; reactors never block and do no step's arithmetic: the push that completes a
// segment of every share hands it to the generation's ShardState applier thread, which applies
// it and starts the replies' next writes (WhenSummed). Replacing a generation closes its state
// without waiting for a segment being applied; whoever drops the state's last reference waits
// for that one segment at most.
#ifndef RINGSIDE_SERVER_PS_PS_SERVICE_H_
#define RINGSIDE_SERVER_PS_PS_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "common/stream_limits.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/shard.h"

namespace ringside::server {

// Per-worker link counters of one shard (index = worker rank); empty members are not counted.
struct ShardLinkMetrics {
  std::vector<LinkReceiveMetrics> from_worker;  // worker -> shard gradients
  std::vector<LinkSendMetrics> to_worker;       // shard -> worker parameters
};

// What the shard serves in one generation: its one Shard (server/ps/shard.h), whatever the
// job's consistency, and its links.
struct ShardGeneration {
  std::shared_ptr<Shard> shard;
  ShardLinkMetrics links;
  // The range of the flat parameter vector served (an elastic or static shard's); ReadState says
  // it, so a later generation with another shard map knows where the state goes. Unset: the
  // job's range when its length fits, else one from 0.
  std::optional<ElementRange> range = std::nullopt;
};

// The job's shape as the shard map gives it: what a Load must fit.
struct ShardJob {
  int shard = 0;
  ElementRange range;  // of the flat parameter vector
  OptimizerConfig optimizer;
  // The controller's generation that assigned it. A Load is checked only against the assignment
  // of its own generation or a later one: an older one may have another shard map.
  uint64_t generation = 0;
  // The job's consistency settings: which policy a Load's Shard takes.
  int64_t backup_workers = 0;
  int64_t staleness = 0;
};

// Builds a generation's counters for the shard's index and its number of workers; null:
// nothing counted.
struct ShardMetricsFactory {
  std::function<ShardLinkMetrics(int shard, int workers)> links;
  ShardMetrics shard;
};

// The most workers a Load may announce. Far above any real job; a shard keeps per-worker state
// (a share, link counters), so a corrupt or hostile `workers` must not size it.
inline constexpr uint32_t kMaxLoadWorkers = 1 << 16;

// Step is served raw (common/payload_codec.h): a push's payload is summed straight from the slices
// gRPC received it in, and a reply's is written straight into the slice gRPC sends.
using ParameterShardBase = proto::ParameterShard::WithRawCallbackMethod_Step<
    proto::ParameterShard::WithCallbackMethod_GetParameters<
        proto::ParameterShard::WithCallbackMethod_Load<
            proto::ParameterShard::WithCallbackMethod_PushPull<
                proto::ParameterShard::WithCallbackMethod_ReadState<
                    proto::ParameterShard::Service>>>>>;

// Who may hold a stream, and for how long (common/stream_limits.h). An elastic shard's Step,
// PushPull and Load check the caller's link key against the generation and rank in the call's
// metadata when the call starts, before anything is read (ReadState and GetParameters before
// anything is said), and refuse with PERMISSION_DENIED; the key's claims must agree with the
// messages' own fields (PERMISSION_DENIED otherwise). Push streams (Step, PushPull) are then
// admitted within `limits` (per authenticated worker rank, or per TLS identity / address on a
// static shard; RESOURCE_EXHAUSTED beyond) and take the generation served only with their
// first message, so a stream that sends nothing holds no generation's state; every stream ends
// with DEADLINE_EXCEEDED when its first message, or the next one, is later than `limits` allow.
class ParameterShardService final : public ParameterShardBase {
 public:
  // `segment_bytes`: largest segment sent back. `limits`: ValidateStreamLimits's (checked by the
  // daemon's flags; tests make them small).
  ParameterShardService(uint64_t segment_bytes, ShardMetricsFactory metrics = {},
                        StreamLimits limits = {});

  // Serves `generation` from now on; the one it replaces is closed.
  void Serve(ShardGeneration generation);
  // Elastic shards: the job Loads must fit. Resumes the Loads waiting for an assignment of
  // `job.generation` or an earlier generation, on this thread.
  void SetJob(ShardJob job);
  // The generation served now; null before the first.
  std::shared_ptr<const ShardGeneration> current() const;

  // What a Step stream's reactor does, reported as it happens (on the thread doing it) to the
  // hook a test sets (tests/support/ps_test_hooks.h) by the streams opened after it is set.
  enum class StepEvent {
    // More of the step's sum is final and a write of it is about to be started by the state's
    // callback, which is not a gRPC reaction (the applier thread, or whoever closes the state).
    kReplyStarting,
    // A segment of the worker's share is in the step's sum (AddSegment accepted it).
    kSegmentAdded,
    // The worker half-closed and its share is complete (FinishPush accepted it).
    kPushed,
    // The stream ended (cancelled, say) while that reply was being started: its Finish waits
    // for the reply's first write to be issued, so the call cannot be over before that.
    kFinishDeferred,
    // OnDone: gRPC is done with the stream.
    kDone,
  };

  // Reads proto::PsPush messages and writes proto::PsRangeValues ones, raw.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Step(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<proto::PsRangeValues>* GetParameters(
      grpc::CallbackServerContext* context, const proto::PsRangeRequest* request) override;
  grpc::ServerReadReactor<proto::PsStateSegment>* Load(grpc::CallbackServerContext* context,
                                                       proto::PsLoadReply* reply) override;
  // Bounded staleness, async and backup workers (ps_push_pull_stream.cc): FAILED_PRECONDITION
  // from a generation of synchronous steps (as Step's from a push-pull one).
  grpc::ServerBidiReactor<proto::PsGradientPush, proto::PsPulledValues>* PushPull(
      grpc::CallbackServerContext* context) override;
  // The state a push-pull shard holds (PushPullShard::ResumeState), for a later generation's rank
  // 0.
  grpc::ServerWriteReactor<proto::PsStateSegment>* ReadState(
      grpc::CallbackServerContext* context, const proto::PsStateRequest* request) override;
  // Waits until a ReadState for a generation after `after` has delivered the whole state (every
  // segment written, the stream finished OK), or `deadline`; true when one has. A shard that
  // leaves holding the state waits on it to hand its range over.
  bool AwaitStateRead(uint64_t after, absl::Time deadline) const;
  // Test only (ps_daemon.h's fault point `handover`): runs when a ReadState for a later
  // generation than the one served is let in, before it sends anything. Set before serving.
  void SetHandOverHook(std::function<void()> hook) { hand_over_hook_ = std::move(hook); }

  // An elastic shard's credential (common/auth.h): from now on a Step must present the link key
  // of its generation and worker rank, a Load (and GetParameters) rank 0's load key of its
  // generation, as the controller gave them to the workers it assigned. Empty (a static shard):
  // nothing is checked beyond mutual TLS.
  // Set before serving: the credential is the shard's own, made before it registers; set again
  // (a fresh one) before it registers again, so keys made from the old one are refused.
  void SetMemberCredential(std::string credential);
  // PERMISSION_DENIED unless `presented` is the key for `generation` and `rank`.
  absl::Status CheckStepKey(absl::string_view presented, uint64_t generation, int rank) const;
  absl::Status CheckLoadKey(absl::string_view presented, uint64_t generation) const;
  // An elastic shard's GetParameters: the generation the call claims beside its load key, the key
  // checked (PERMISSION_DENIED otherwise); nullopt on a static shard, which has no keys.
  absl::StatusOr<std::optional<uint64_t>> ParameterReadClaim(
      const grpc::ServerContextBase& context) const;

  // Checks a Load's first segment against the job and the generation served; on success returns
  // that job (its range and optimiser size the state: parameters, then the optimiser's state).
  // Workers above kMaxLoadWorkers are refused before anything is allocated for them.
  absl::StatusOr<ShardJob> CheckLoad(const proto::PsStateSegment& first) const;
  // Restores the loaded state (`first`'s header; the range's `parameters` and `optimizer`, into
  // which the optimiser's state was imported as it arrived) as a new generation and serves it.
  // CheckLoad's refusal, or FAILED_PRECONDITION, when the job or the generation served changed
  // meanwhile so that the state no longer fits (another optimiser included); nothing changes.
  absl::Status FinishLoad(const proto::PsStateSegment& first, std::vector<float> parameters,
                          Optimizer optimizer);
  // A load that keeps the served state (`first` checked by CheckLoad, keep_served_state set):
  // the generation served, push-pull and of the job's range, goes on as `first`'s generation with
  // its workers, at the step it resumes at (PushPullShard::ResumeState) or `first`'s step if
  // later, as FinishLoad would serve it loaded with that very state. Returns that step.
  // NOT_FOUND when there is none to keep; FinishLoad's refusals.
  absl::StatusOr<uint64_t> KeepServedState(const proto::PsStateSegment& first);

  // A Load of `generation` (its key checked) before anything of it is stored: false when the
  // shard has its assignment of that generation or a later one, or never will (a static shard,
  // serving a generation of its own without a job; CheckLoad refuses the Load then). True: the
  // Load must wait, and `resume` runs once, on the thread of the SetJob that brings such an
  // assignment, unless CancelAssignmentWait(waiter) takes it back first. `waiter` names the
  // wait (one per waiter).
  bool AwaitAssignment(uint64_t generation, const void* waiter, std::function<void()> resume);
  // True when the wait was still pending and is dropped: its `resume` will not run.
  bool CancelAssignmentWait(const void* waiter);
  // Loads waiting for an assignment now.
  size_t loads_awaiting_assignment() const;

  // Streams (Step, PushPull, Load) held now; refused for a bound so far; push streams watched
  // for silence now, and ended for it so far.
  int streams_held() const { return admission_.held(); }
  uint64_t streams_refused() const { return admission_.refused(); }
  size_t streams_watched() const { return watchdog_.watched(); }
  uint64_t streams_expired() const { return watchdog_.expired(); }

  // A push stream's call start (ps_step_stream.cc, ps_push_pull_stream.cc): the caller's claim
  // read and, on an elastic shard, its key checked (PERMISSION_DENIED); then a place admitted
  // (RESOURCE_EXHAUSTED). `what` names the streams.
  struct PushAdmission {
    LinkClaim claim;
    StreamAdmission::Ticket ticket;
  };
  absl::StatusOr<PushAdmission> AdmitPush(const grpc::CallbackServerContext& context,
                                          const char* what);
  // PERMISSION_DENIED unless a message's generation and rank are what its call claimed (a
  // static shard's call may claim none).
  static absl::Status CheckClaimed(const LinkClaim& claim, uint64_t generation, int rank);
  StreamWatchdog& watchdog() { return watchdog_; }

 private:
  struct AssignmentWait {
    const void* waiter;
    uint64_t generation;
    std::function<void()> resume;
  };

  absl::StatusOr<ShardJob> CheckLoadLocked(const proto::PsStateSegment& first) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The range of the parameters `generation` (push-pull, `push_pull` its policy) serves: its own,
  // else the job's when the lengths agree, else one from 0 (what ReadState says it holds, and
  // what a keep must find equal to its range now).
  ElementRange ServedRangeLocked(const ShardGeneration& generation,
                                 const PushPullShard& push_pull) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool elastic() const;  // a credential is set: link keys are checked
  // A superseded generation's shard, closed.
  static void CloseGeneration(const std::shared_ptr<const ShardGeneration>& previous);

  const uint64_t segment_elements_;
  const ShardMetricsFactory metrics_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ShardGeneration> current_ ABSL_GUARDED_BY(mu_);
  std::optional<ShardJob> job_ ABSL_GUARDED_BY(mu_);
  // Set by tests only, through tests/support/ps_test_hooks.h (a friend), so that no production
  // header offers them; null: nothing reported.
  friend class PsTestHooks;
  std::function<void(StepEvent, int)> step_hook_ ABSL_GUARDED_BY(mu_);
  // Asked at a Step stream's first segment (generation, worker, step): an error refuses the push
  // as a refused message would be, with that status.
  std::function<absl::Status(uint64_t, int, uint64_t)> push_refusal_hook_ ABSL_GUARDED_BY(mu_);
  std::function<void(uint64_t)> load_wait_hook_ ABSL_GUARDED_BY(mu_);
  std::vector<AssignmentWait> assignment_waits_ ABSL_GUARDED_BY(mu_);
  std::string credential_ ABSL_GUARDED_BY(mu_);
  uint64_t state_read_by_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void()> hand_over_hook_;  // set before serving, then only read  // the newest
                                          // generation AwaitStateRead saw
  StreamAdmission admission_;
  StreamWatchdog watchdog_;  // last: its thread may expire streams until it is destroyed
};

// One Load stream's state as its segments arrive, what the Load reactor does without gRPC: the
// first segment is checked (CheckLoad) and sizes the sequence, every later one must carry the
// same header and continue the sequence, and on the half-close Finish checks that the sequence
// is complete and hands it to FinishLoad. Nothing changes on the shard before that. A load that
// keeps the served state is its first segment alone, with no payload (KeepServedState).
// Thread-compatible.
class StateLoad {
 public:
  explicit StateLoad(ParameterShardService& service) : service_(service) {}

  // INVALID_ARGUMENT (or CheckLoad's refusal) for a segment that does not fit; the load is
  // over then.
  absl::Status Add(const proto::PsStateSegment& segment);
  // INVALID_ARGUMENT when incomplete; else FinishLoad's status.
  absl::Status Finish();
  // After a keep's Finish: the step the shard resumes at (PsLoadReply.step); else 0.
  uint64_t kept_step() const { return kept_step_; }

 private:
  ParameterShardService& service_;
  proto::PsStateSegment first_;  // the transfer's header fields
  bool began_ = false;
  bool keeps_ = false;  // keep_served_state: the first segment was the whole load
  uint64_t kept_step_ = 0;
  // The sequence as it arrives, cut where the range's parameters end: the parameters into their
  // vector, the optimiser's state imported into the range's optimiser (made at the first
  // segment), so the load holds the state once, as the shard will, and no copy of it.
  std::vector<float> parameters_;
  std::optional<Optimizer> optimizer_;
  uint64_t received_ = 0;
  uint64_t elements_ = 0;  // of the whole sequence
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PS_SERVICE_H_
