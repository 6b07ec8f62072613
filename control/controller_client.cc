#include "control/controller_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"

namespace ringside::server {

absl::StatusOr<std::unique_ptr<ControllerClient>> ControllerClient::Connect(
    const ControllerClientOptions& options, AssignmentCallback on_assignment) {
  auto stub = proto::Controller::NewStub(MakeChannel(options.controller));
  grpc::ClientContext context;
  SetDeadline(context, options.register_timeout);
  context.set_wait_for_ready(true);  // a controller still starting is waited for
  proto::RegisterRequest request;
  request.set_join_token(options.join_token);
  request.set_role(options.role);
  request.set_address(options.address);
  request.set_device(options.device);
  proto::RegisterReply reply;
  const grpc::Status status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    return Annotate(FromGrpcStatus(status),
                    absl::StrCat("registering with the controller at ", options.controller));
  }
  const absl::Duration interval =
      absl::Milliseconds(std::max<uint64_t>(10, reply.heartbeat_interval_ms()));
  return std::unique_ptr<ControllerClient>(
      new ControllerClient(options, reply.member_id(), interval, std::move(on_assignment)));
}

ControllerClient::ControllerClient(const ControllerClientOptions& options, uint64_t member_id,
                                   absl::Duration heartbeat_interval,
                                   AssignmentCallback on_assignment)
    : options_(options),
      member_id_(member_id),
      heartbeat_interval_(heartbeat_interval),
      on_assignment_(std::move(on_assignment)),
      stub_(proto::Controller::NewStub(MakeChannel(options.controller))) {
  watch_thread_ = std::thread([this] { WatchLoop(); });
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
}

ControllerClient::~ControllerClient() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watch_context_.TryCancel();
  watch_thread_.join();
  heartbeat_thread_.join();
}

void ControllerClient::WatchLoop() {
  proto::WatchRequest request;
  request.set_member_id(member_id_);
  // No deadline: the watch lasts as long as the membership; cancelled by the destructor.
  std::unique_ptr<grpc::ClientReader<proto::Assignment>> reader =
      stub_->Watch(&watch_context_, request);
  proto::Assignment assignment;
  while (reader->Read(&assignment)) {
    {
      absl::MutexLock lock(&mu_);
      latest_ = assignment;
    }
    if (on_assignment_) on_assignment_(assignment);
  }
  const grpc::Status status = reader->Finish();
  Fail(absl::UnavailableError(
      absl::StrCat("the controller at ", options_.controller, " ended the watch (",
                   status.ok() ? "this member was dropped" : status.error_message(),
                   "); this member is no longer part of the job")));
}

void ControllerClient::HeartbeatLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stop), heartbeat_interval_)) return;
    }
    grpc::ClientContext context;
    SetDeadline(context, std::min(options_.rpc_timeout, heartbeat_interval_ * 3));
    proto::HeartbeatRequest request;
    request.set_member_id(member_id_);
    request.set_generation(latest_generation());
    request.set_completed_steps(completed_steps_);
    proto::HeartbeatReply reply;
    const grpc::Status status = stub_->Heartbeat(&context, request, &reply);
    // FAILED_PRECONDITION: the generation moved on and the watch is about to say so;
    // UNAVAILABLE: the controller may come back. Being dropped is final.
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      Fail(absl::NotFoundError(
          absl::StrCat("the controller dropped this member: ", status.error_message())));
    }
  }
}

void ControllerClient::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (failure_.ok() && !stopping_) failure_ = std::move(status);
}

absl::StatusOr<proto::Assignment> ControllerClient::WaitForAssignment(uint64_t after,
                                                                      absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !failure_.ok() || (latest_.has_value() && latest_->generation() > after);
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat("no assignment after generation ", after,
                                                    " from the controller at ", options_.controller,
                                                    " in time; are all the job's members up?"));
  }
  if (latest_.has_value() && latest_->generation() > after) return *latest_;
  return failure_;
}

std::optional<proto::Assignment> ControllerClient::latest() const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

uint64_t ControllerClient::latest_generation() const {
  absl::MutexLock lock(&mu_);
  return latest_.has_value() ? latest_->generation() : 0;
}

absl::Status ControllerClient::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

}  // namespace ringside::server
