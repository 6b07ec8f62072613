// The Controller gRPC service over Membership (proto/controller.proto says the protocol). Watch
// streams are small reactors that push a member's assignment each time the generation changes;
// Notify() (after any change: a registration, a mode switch, an expiry) wakes them.
// Thread-safe; reactors never block.
#ifndef RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_
#define RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/stream_limits.h"
#include "prometheus/counter.h"
#include "proto/controller.grpc.pb.h"
#include "server/controller/checkpoint_keeper.h"
#include "server/controller/membership.h"

namespace ringside::server {

class WatchReactor;

class ControllerService final : public proto::Controller::CallbackService {
 public:
  // `membership` and `log` must outlive the service; `job` goes into every assignment;
  // `upload_limits` bound the checkpoint uploads (kUploadLimits; tests make them small).
  ControllerService(Membership& membership, proto::JobSpec job, absl::Duration heartbeat_timeout,
                    std::ostream& log, StreamLimits upload_limits = kUploadLimits);
  ~ControllerService() override;

  // Durable state: assignments name `keeper`'s newest checkpoint and ask rank 0 for one every
  // `every` steps, and the checkpoint RPCs are served (without a keeper they are UNIMPLEMENTED
  // with a hint). Call before serving; `keeper` and `nonfinite_refused`
  // (ringside_nonfinite_refused_total{what="checkpoint"}; null: not counted) must outlive the
  // service.
  //
  // What an upload must be (controller_checkpoints.cc), else it is refused and nothing changes,
  // on disk or in memory: from the member the call's metadata names and authenticates, checked
  // when the call starts, before any of its payload is read (UNAUTHENTICATED, NOT_FOUND);
  // from rank 0 of the current generation (PERMISSION_DENIED); of the job's sizes; of a step
  // newer than the checkpoint held and within the job's --steps (FAILED_PRECONDITION,
  // INVALID_ARGUMENT); every value finite (INVALID_ARGUMENT, counted, logged). A step is
  // accounted for once a worker of the generation other than the uploader (the uploader itself
  // when it is the only one) has reported, in a heartbeat, at least the step before it: the
  // upload is then accepted. An upload ahead of that is held, one at a time in memory (a later
  // upload replaces it), and accepted by the heartbeat that accounts for it; until then it is
  // neither named in assignments nor written.
  void EnableCheckpoints(CheckpointKeeper* keeper, uint64_t every,
                         prometheus::Counter* nonfinite_refused = nullptr);
  // The token SetMode requires (ringside-controller --operator_token_file); empty: no mode
  // switches at all (PERMISSION_DENIED). Call before serving.
  void SetOperatorToken(std::string token) { operator_token_ = std::move(token); }
  // The time registrations and heartbeats are stamped with (default absl::Now): tests pass a
  // manual clock and drive Membership::Expire with it, so a member is dropped at a point they
  // choose, not by timing. Call before serving.
  void SetClock(std::function<absl::Time()> clock) { clock_ = std::move(clock); }

  // OK when the call carries `member`'s credential (common/auth.h); UNAUTHENTICATED otherwise,
  // saying which member and what to do.
  absl::Status AuthenticateMember(const grpc::ServerContextBase& context, uint64_t member) const;

  // Pushes the current assignment to every watcher whose generation is out of date, and ends
  // the watch streams of members that are no longer members.
  void Notify();

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const proto::RegisterRequest* request,
                                     proto::RegisterReply* reply) override;
  grpc::ServerWriteReactor<proto::Assignment>* Watch(grpc::CallbackServerContext* context,
                                                     const proto::WatchRequest* request) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const proto::HeartbeatRequest* request,
                                      proto::HeartbeatReply* reply) override;
  // Membership rule 11; logged with the member's role, address and steps.
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* context,
                                  const proto::LeaveRequest* request,
                                  proto::LeaveReply* reply) override;
  grpc::ServerUnaryReactor* SetMode(grpc::CallbackServerContext* context,
                                    const proto::ModeRequest* request,
                                    proto::ModeReply* reply) override;
  // controller_checkpoints.cc
  grpc::ServerReadReactor<proto::CheckpointSegment>* PutCheckpoint(
      grpc::CallbackServerContext* context, proto::CheckpointReply* reply) override;
  grpc::ServerWriteReactor<proto::CheckpointSegment>* GetCheckpoint(
      grpc::CallbackServerContext* context, const proto::CheckpointRequest* request) override;

  const Membership& membership() const { return membership_; }
  const proto::JobSpec& job() const { return job_; }
  // controller_checkpoints.cc: a complete upload that passed every check of its content, from
  // `member`: accepted now when its step is accounted for, else held (see EnableCheckpoints).
  // OK with the step accepted, or 0 when held; the keeper's refusal otherwise.
  absl::StatusOr<uint64_t> TakeCheckpoint(uint64_t member, uint64_t step,
                                          std::vector<float> parameters,
                                          std::vector<float> optimizer_state);
  // Counts and logs an upload refused for a NaN or infinity.
  void ReportNonFiniteCheckpoint(uint64_t member, uint64_t step, size_t non_finite);
  const CheckpointKeeper* checkpoints() const { return keeper_; }
  uint64_t checkpoint_every() const { return checkpoint_every_; }

  // Checkpoint uploads open at once, and their silence (common/stream_limits.h): only rank 0
  // uploads, one at a time, so two per member (a retry beside one being cancelled) and four in
  // all. Each upload receives the job's whole state, so an insider opening many cannot multiply
  // what the controller holds. Beyond: RESOURCE_EXHAUSTED; silent: cancelled.
  static constexpr StreamLimits kUploadLimits{absl::Seconds(30), absl::Minutes(5), 2, 4};
  // Watch streams: one per member, and a few more while a reconnecting member's old stream has
  // not ended yet; the watches of many members in all. Beyond: RESOURCE_EXHAUSTED.
  static constexpr StreamLimits kWatchLimits{absl::Seconds(30), absl::Minutes(5), 4, 4096};
  StreamWatchdog& upload_watchdog() { return upload_watchdog_; }
  int watch_streams_held() const { return watch_admission_.held(); }
  int uploads_held() const { return upload_admission_.held(); }

 private:
  // An upload ahead of the steps reported: held until a heartbeat accounts for it.
  struct HeldCheckpoint {
    uint64_t member = 0;
    uint64_t step = 0;
    std::vector<float> parameters;
    std::vector<float> optimizer_state;
  };
  // Whether a worker's report accounts for `step` uploaded by `member` (EnableCheckpoints).
  bool StepAccountedFor(uint64_t member, uint64_t step) const;
  // After a heartbeat: the held upload, if any, accepted once its step is accounted for.
  void AcceptHeldCheckpoint();
  // A Heartbeat that reports a failed generation (membership.h rule 9).
  grpc::ServerUnaryReactor* ReportFailure(grpc::CallbackServerContext* context,
                                          const proto::HeartbeatRequest& request);
  void Log(const std::string& line);

  Membership& membership_;
  const proto::JobSpec job_;
  const absl::Duration heartbeat_timeout_;
  std::ostream& log_;
  CheckpointKeeper* keeper_ = nullptr;
  prometheus::Counter* nonfinite_refused_ = nullptr;
  absl::Mutex held_mu_;
  std::optional<HeldCheckpoint> held_ ABSL_GUARDED_BY(held_mu_);
  std::string operator_token_;
  uint64_t checkpoint_every_ = 0;
  std::function<absl::Time()> clock_ = [] { return absl::Now(); };
  absl::Mutex mu_;
  std::vector<std::weak_ptr<WatchReactor>> watchers_ ABSL_GUARDED_BY(mu_);
  absl::Mutex log_mu_;
  StreamAdmission watch_admission_{kWatchLimits};
  StreamAdmission upload_admission_;
  StreamWatchdog upload_watchdog_;  // last: it may expire uploads until it goes
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_
