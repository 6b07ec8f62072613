// A member's side of the controller protocol (proto/controller.proto): register with the join
// token (waiting for a controller that is still starting), hold the watch stream on a thread of
// its own and keep the latest assignment, heartbeat on another with the latest generation seen
// and the steps completed. Workers and elastic shards both use it.
//
// Thread-safe. Errors: Connect returns the registration's status (UNAUTHENTICATED for a wrong
// token, ALREADY_EXISTS, DEADLINE_EXCEEDED when no controller answered); later, failure() says
// why the member lost the controller (dropped: NOT_FOUND; watch stream ended: UNAVAILABLE).
#ifndef RINGSIDE_CONTROL_CONTROLLER_CLIENT_H_
#define RINGSIDE_CONTROL_CONTROLLER_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/controller.grpc.pb.h"

namespace ringside::server {

struct ControllerClientOptions {
  std::string controller;  // HOST:PORT
  std::string join_token;
  proto::Role role = proto::ROLE_WORKER;
  std::string address;  // what this member serves on, as others dial it
  std::string device = "cpu";
  absl::Duration register_timeout = absl::Seconds(60);  // the controller may start later
  absl::Duration rpc_timeout = absl::Seconds(10);
};

class ControllerClient {
 public:
  // Runs on the watch thread for every assignment received (after latest() has it).
  using AssignmentCallback = std::function<void(const proto::Assignment&)>;

  static absl::StatusOr<std::unique_ptr<ControllerClient>> Connect(
      const ControllerClientOptions& options, AssignmentCallback on_assignment = nullptr);
  ~ControllerClient();  // ends the watch and the heartbeats

  // The first assignment with a generation above `after`; DEADLINE_EXCEEDED at `deadline`, or
  // failure() once the controller is lost.
  absl::StatusOr<proto::Assignment> WaitForAssignment(uint64_t after, absl::Time deadline) const;
  std::optional<proto::Assignment> latest() const;
  uint64_t latest_generation() const;
  // Reported with the next heartbeats.
  void set_completed_steps(uint64_t steps) { completed_steps_ = steps; }
  absl::Status failure() const;
  uint64_t member_id() const { return member_id_; }

 private:
  ControllerClient(const ControllerClientOptions& options, uint64_t member_id,
                   absl::Duration heartbeat_interval, AssignmentCallback on_assignment);
  void WatchLoop();
  void HeartbeatLoop();
  void Fail(absl::Status status);

  const ControllerClientOptions options_;
  const uint64_t member_id_;
  const absl::Duration heartbeat_interval_;
  const AssignmentCallback on_assignment_;
  std::unique_ptr<proto::Controller::Stub> stub_;
  grpc::ClientContext watch_context_;
  std::atomic<uint64_t> completed_steps_{0};

  mutable absl::Mutex mu_;
  std::optional<proto::Assignment> latest_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watch_thread_;
  std::thread heartbeat_thread_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_CONTROL_CONTROLLER_CLIENT_H_
