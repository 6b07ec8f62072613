// The Controller gRPC service over Membership (proto/controller.proto says the protocol). Watch
// streams are small reactors that push a member's assignment each time the generation changes;
// Notify() (after any change: a registration, a mode switch, an expiry) wakes them.
// Thread-safe; reactors never block.
#ifndef RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_
#define RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/controller.grpc.pb.h"
#include "server/controller/checkpoint_keeper.h"
#include "server/controller/membership.h"

namespace ringside::server {

class WatchReactor;

class ControllerService final : public proto::Controller::CallbackService {
 public:
  // `membership` and `log` must outlive the service; `job` goes into every assignment.
  ControllerService(Membership& membership, proto::JobSpec job, absl::Duration heartbeat_timeout,
                    std::ostream& log);
  ~ControllerService() override;

  // Durable state: assignments name `keeper`'s newest checkpoint and ask rank 0 for one every
  // `every` steps, and the checkpoint RPCs are served (without a keeper they are UNIMPLEMENTED
  // with a hint). Call before serving; `keeper` must outlive the service.
  void EnableCheckpoints(CheckpointKeeper* keeper, uint64_t every);
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
  const CheckpointKeeper* checkpoints() const { return keeper_; }
  uint64_t checkpoint_every() const { return checkpoint_every_; }

 private:
  Membership& membership_;
  const proto::JobSpec job_;
  const absl::Duration heartbeat_timeout_;
  std::ostream& log_;
  CheckpointKeeper* keeper_ = nullptr;
  std::string operator_token_;
  uint64_t checkpoint_every_ = 0;
  std::function<absl::Time()> clock_ = [] { return absl::Now(); };
  absl::Mutex mu_;
  std::vector<std::weak_ptr<WatchReactor>> watchers_ ABSL_GUARDED_BY(mu_);
  absl::Mutex log_mu_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_CONTROLLER_SERVICE_H_
