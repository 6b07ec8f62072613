// A member's side of the controller protocol (proto/controller.proto): register with the join
// token (waiting for a controller that is still starting), hold the watch stream on a thread of
// its own and keep the latest assignment, heartbeat on another with the latest generation seen
// and the steps completed. Workers and elastic shards both use it.
//
// A lost controller is not the member's end: the member keeps its generation (training goes
// on), the heartbeats keep trying, and the watch is reopened until the controller answers again
// (a restarted controller with its membership record knows this member's id). A controller that
// says this member is unknown or dropped (NOT_FOUND: it missed heartbeats while alive, say under
// heavy load, or the controller was restarted without its record; UNAUTHENTICATED: such a
// controller gave the member's old id to another) is answered by registering again, with a
// fresh credential and the newest generation seen, when the member says how to install one
// (ControllerClientOptions::install_credential); the member then gets a new id and its place
// through the next generation, and keeps its latest assignment meanwhile. Only a controller that
// refuses it ends the member.
//
// Thread-safe. Errors: Connect returns the registration's status (UNAUTHENTICATED for a wrong
// token, DEADLINE_EXCEEDED when no controller answered); later, failure() says why the member
// lost its membership (the refused registration's status; NOT_FOUND when dropped and not
// registering again; PERMISSION_DENIED and the like).
#ifndef RINGSIDE_SERVER_CONTROLLER_CONTROLLER_CLIENT_H_
#define RINGSIDE_SERVER_CONTROLLER_CONTROLLER_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/state_pieces.h"
#include "common/transport_security.h"
#include "proto/controller.grpc.pb.h"
#include "server/controller/job_spec.h"

namespace ringside::server {

struct ControllerClientOptions {
  std::string controller;  // HOST:PORT
  std::string join_token;
  proto::Role role = proto::ROLE_WORKER;
  std::string address;  // what this member serves on, as others dial it
  // This member's own secret (common/auth.h: RandomSecret), made before it serves anything so
  // its services check link keys from their first call; registered with the controller.
  std::string credential;
  std::string device = "cpu";
  absl::Duration register_timeout = absl::Seconds(60);  // the controller may start later
  absl::Duration rpc_timeout = absl::Seconds(10);
  absl::Duration checkpoint_timeout = absl::Seconds(60);  // one upload or download
  TransportSecurity security;                             // of the channel to the controller
  // Registering again (see above): called on the watch thread with a fresh credential before
  // the member registers again; from its return on, the member's services must check link keys
  // with that credential only, so keys made from the old one stop working. Null: the member
  // does not register again, and being dropped ends it (failure()).
  std::function<void(const std::string& credential)> install_credential;
  // Test-only: asked before each heartbeat; false withholds that one (the heartbeat thread
  // carries on at its interval). A test closes it to have a live member dropped at a point it
  // names rather than by timing. Null: every heartbeat is sent. An option, not a setter in a
  // test-only header, because the heartbeat thread starts inside Connect(); no daemon sets it.
  std::function<bool()> heartbeat_gate;
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
  uint64_t completed_steps() const { return completed_steps_.load(); }
  // Tells the controller at once (a heartbeat of its own, within the rpc timeout) that a
  // collective of `generation` failed here, so that it forms a new generation of the same
  // members (membership.h rule 9). The controller's status, annotated.
  absl::Status ReportFailedGeneration(uint64_t generation);
  absl::Status failure() const;
  // The id of the latest registration (a member that registered again has a new one).
  uint64_t member_id() const;
  // Registrations that succeeded: 1, plus one each time the member registered again.
  int registrations() const;
  // Heartbeats the controller accepted (OK); tests wait on it.
  int heartbeats_accepted() const;

  // Durable state (the controller's --checkpoint_dir): uploads the job's state after `step`
  // completed steps (rank 0, when the assignment asks for it), and reads the controller's
  // checkpoint of `step` back, checking it has exactly the sizes given. Each bounded by the rpc
  // timeout; errors are the controller's status, annotated.
  //
  // The upload reads the state a segment at a time: `read` fills elements [offset, offset +
  // out.size()) of [parameters..., optimiser state...] (state_elements in all; a segment may
  // straddle the parameters' end), so the uploader needs no copy of its state.
  absl::Status PutCheckpoint(uint64_t step, uint64_t parameters, uint64_t state_elements,
                             const StatePieceReader& read);
  absl::Status PutCheckpoint(uint64_t step, absl::Span<const float> parameters,
                             absl::Span<const float> optimizer_state);
  absl::Status GetCheckpoint(uint64_t step, absl::Span<float> parameters,
                             absl::Span<float> optimizer_state);

  // Leaves the job (membership rule 11): stops the watch and the heartbeats (the member
  // registers again no more), then tells the controller, within the rpc timeout, so the others
  // regroup without waiting for the heartbeat timeout. Returns the generation they go on in.
  // The controller's status, annotated; FAILED_PRECONDITION when called twice. Nothing of the
  // client works afterwards but its accessors.
  absl::StatusOr<uint64_t> Leave();

  // A third of the controller's heartbeat timeout, as its registration reply said.
  absl::Duration heartbeat_interval() const;

  // Watch streams opened so far (1 until the controller is lost once); tests wait on it.
  int watch_streams_opened() const;

 private:
  ControllerClient(const ControllerClientOptions& options, uint64_t member_id,
                   absl::Duration heartbeat_interval, AssignmentCallback on_assignment);
  // Every call after registration carries the member's credential and id.
  void Authenticate(grpc::ClientContext& context) const;
  void WatchLoop();
  // One watch stream, until it ends; returns its status.
  grpc::Status WatchOnce();
  // After the controller ended the watch with `why` (NOT_FOUND): a fresh credential, installed,
  // then registrations until one succeeds (a controller that does not answer is waited for).
  // OK once registered again, or when the client is stopping; else why the member is lost.
  absl::Status RegisterAgain(const grpc::Status& why);
  void HeartbeatLoop();
  // One heartbeat of the current registration; its status.
  grpc::Status HeartbeatOnce();
  void Fail(absl::Status status);
  // Waits `how_long` unless the client is stopping; true when stopping.
  bool StoppingAfter(absl::Duration how_long);

  const ControllerClientOptions options_;
  const AssignmentCallback on_assignment_;
  std::unique_ptr<proto::Controller::Stub> stub_;
  std::atomic<uint64_t> completed_steps_{0};

  mutable absl::Mutex mu_;
  // The current registration: it changes when the member registers again.
  uint64_t member_id_ ABSL_GUARDED_BY(mu_);
  std::string credential_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_);
  int registrations_ ABSL_GUARDED_BY(mu_) = 1;
  int heartbeats_accepted_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<proto::Assignment> latest_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool left_ ABSL_GUARDED_BY(mu_) = false;
  // The watch thread's call in flight (a watch stream or a registration), cancelled on stop.
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  grpc::ClientContext* register_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  int watch_streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread watch_thread_;
  std::thread heartbeat_thread_;
};

// A daemon's side of joining an elastic job, written once for every member (ringside-worker,
// ringside-ps): what the daemon knows of itself, the rest coming from its MemberOptions.
struct MemberRegistration {
  proto::Role role = proto::ROLE_WORKER;
  std::string address;     // what the member serves on, as others dial it (AdvertisedAddress)
  std::string credential;  // ControllerClientOptions::credential: made before serving anything
  std::string device = "cpu";
  TransportSecurity security;  // of the channel to the controller
  // ControllerClientOptions::install_credential: the member's services check link keys with the
  // fresh credential from its return on. Null: the member does not register again.
  std::function<void(const std::string& credential)> install_credential;
};

// The checks a daemon makes of its member flags before it starts anything: --controller is
// HOST:PORT (else INVALID_ARGUMENT) and --join_token_file holds a token (ReadJoinToken's error:
// INVALID_ARGUMENT for no path or an empty file, the file's own error, e.g. NOT_FOUND, naming
// the flag).
absl::Status ValidateMemberOptions(const MemberOptions& member);

// Reads the join token, registers with the controller under `member.register_timeout`
// (ControllerClient::Connect) and returns the connected client. Each time the member registers
// again it says so on `log` ("worker: ..." or "ps: ..."), after the fresh credential is
// installed. Errors: ReadJoinToken's (before anything is dialled), or Connect's.
absl::StatusOr<std::unique_ptr<ControllerClient>> RegisterMember(
    const MemberOptions& member, MemberRegistration registration, std::ostream& log,
    ControllerClient::AssignmentCallback on_assignment = nullptr);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_CONTROLLER_CLIENT_H_
