#include "server/controller/controller_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside::server {
namespace {

constexpr size_t kCheckpointSegmentElements = (size_t{1} << 20) / sizeof(float);

struct Registration {
  uint64_t member_id = 0;
  absl::Duration heartbeat_interval;
};

// One Register call under `context` (which the caller may cancel), waiting for a controller
// that is still starting; the controller's status, annotated.
absl::StatusOr<Registration> RegisterOnce(proto::Controller::Stub& stub,
                                          const ControllerClientOptions& options,
                                          const std::string& credential, uint64_t generation_seen,
                                          grpc::ClientContext& context) {
  SetDeadline(context, options.register_timeout);
  context.set_wait_for_ready(true);
  proto::RegisterRequest request;
  request.set_join_token(options.join_token);
  request.set_role(options.role);
  request.set_address(options.address);
  request.set_device(options.device);
  request.set_member_credential(credential);
  request.set_generation_seen(generation_seen);
  proto::RegisterReply reply;
  const grpc::Status status = stub.Register(&context, request, &reply);
  if (!status.ok()) {
    return Annotate(FromGrpcStatus(status),
                    absl::StrCat("registering with the controller at ", options.controller));
  }
  return Registration{reply.member_id(),
                      absl::Milliseconds(std::max<uint64_t>(10, reply.heartbeat_interval_ms()))};
}

// What the member calls itself in its log, and what kind of member it is.
struct MemberNames {
  absl::string_view log_name;
  absl::string_view kind;
};

MemberNames NamesOf(proto::Role role) {
  return role == proto::ROLE_PS ? MemberNames{"ps", "shard"} : MemberNames{"worker", "worker"};
}

// A controller that does not answer (yet): the member waits for it.
bool Unanswered(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kCancelled;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControllerClient>> ControllerClient::Connect(
    const ControllerClientOptions& options, AssignmentCallback on_assignment) {
  auto stub = proto::Controller::NewStub(MakeChannel(options.controller, options.security));
  grpc::ClientContext context;
  ASSIGN_OR_RETURN(const Registration registration,
                   RegisterOnce(*stub, options, options.credential, 0, context));
  return std::unique_ptr<ControllerClient>(new ControllerClient(
      options, registration.member_id, registration.heartbeat_interval, std::move(on_assignment)));
}

ControllerClient::ControllerClient(const ControllerClientOptions& options, uint64_t member_id,
                                   absl::Duration heartbeat_interval,
                                   AssignmentCallback on_assignment)
    : options_(options),
      on_assignment_(std::move(on_assignment)),
      stub_(proto::Controller::NewStub(MakeChannel(options.controller, options.security))),
      member_id_(member_id),
      credential_(options.credential),
      heartbeat_interval_(heartbeat_interval) {
  watch_thread_ = std::thread([this] { WatchLoop(); });
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
}

ControllerClient::~ControllerClient() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
    if (register_context_ != nullptr) register_context_->TryCancel();
  }
  watch_thread_.join();
  heartbeat_thread_.join();
}

absl::StatusOr<uint64_t> ControllerClient::Leave() {
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  proto::LeaveRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (left_) return absl::FailedPreconditionError("this member has already left the job");
    left_ = true;
    // First: the controller's answer ends the watch (NOT_FOUND), which must not be taken for a
    // drop to register again after.
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
    if (register_context_ != nullptr) register_context_->TryCancel();
  }
  Authenticate(context);  // the registration cannot change now: the watch thread is stopping
  request.set_member_id(member_id());
  request.set_completed_steps(completed_steps_);
  proto::LeaveReply reply;
  const grpc::Status status = stub_->Leave(&context, request, &reply);
  if (!status.ok()) {
    return Annotate(FromGrpcStatus(status),
                    absl::StrCat("leaving the job at the controller at ", options_.controller));
  }
  return reply.generation();
}

void ControllerClient::Authenticate(grpc::ClientContext& context) const {
  absl::MutexLock lock(&mu_);
  context.AddMetadata(kMemberCredentialMetadata, credential_);
  context.AddMetadata(kMemberIdMetadata, absl::StrCat(member_id_));
}

absl::Duration ControllerClient::heartbeat_interval() const {
  absl::MutexLock lock(&mu_);
  return heartbeat_interval_;
}

bool ControllerClient::StoppingAfter(absl::Duration how_long) {
  absl::MutexLock lock(&mu_);
  auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  return mu_.AwaitWithTimeout(absl::Condition(&stop), how_long);
}

grpc::Status ControllerClient::WatchOnce() {
  grpc::ClientContext context;
  // No deadline: the watch lasts as long as the membership. Waits for a controller that is
  // restarting instead of failing at once.
  context.set_wait_for_ready(true);
  proto::WatchRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return grpc::Status::CANCELLED;
    context.AddMetadata(kMemberCredentialMetadata, credential_);
    request.set_member_id(member_id_);
    watch_context_ = &context;
    ++watch_streams_opened_;
  }
  std::unique_ptr<grpc::ClientReader<proto::Assignment>> reader = stub_->Watch(&context, request);
  proto::Assignment assignment;
  while (reader->Read(&assignment)) {
    {
      absl::MutexLock lock(&mu_);
      if (latest_.has_value() && assignment.generation() <= latest_->generation()) continue;
      latest_ = assignment;
    }
    if (on_assignment_) on_assignment_(assignment);
  }
  const grpc::Status status = reader->Finish();
  absl::MutexLock lock(&mu_);
  watch_context_ = nullptr;
  return status;
}

void ControllerClient::WatchLoop() {
  while (true) {
    const grpc::Status status = WatchOnce();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    switch (status.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:  // the controller went away: it may come back
      case grpc::StatusCode::CANCELLED:    // a controller shutting down cancels its streams
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::UNKNOWN:
        // Not a spin: the next stream waits for the controller to be reachable again.
        if (StoppingAfter(heartbeat_interval())) return;
        continue;
      case grpc::StatusCode::UNAUTHENTICATED:
        // Our credential does not match our id there: the id is someone else's at a controller
        // that forgot us (restarted without its record; its ids start over). Not known, as
        // NOT_FOUND; without registering again the member ends, as before.
        if (!options_.install_credential) {
          Fail(Annotate(FromGrpcStatus(status),
                        absl::StrCat("the controller at ", options_.controller,
                                     " refused this member's watch")));
          return;
        }
        [[fallthrough]];
      case grpc::StatusCode::OK:
      case grpc::StatusCode::NOT_FOUND:
        if (absl::Status again = RegisterAgain(status); !again.ok()) {
          Fail(std::move(again));
          return;
        }
        continue;
      default:
        Fail(
            Annotate(FromGrpcStatus(status), absl::StrCat("the controller at ", options_.controller,
                                                          " refused this member's watch")));
        return;
    }
  }
}

absl::Status ControllerClient::RegisterAgain(const grpc::Status& why) {
  const std::string reason =
      absl::StrCat("the controller at ", options_.controller, " ended this member's watch (",
                   why.ok() ? "this member was dropped" : why.error_message(), ")");
  if (!options_.install_credential) {
    return absl::NotFoundError(absl::StrCat(reason, "; this member is no longer part of the job"));
  }
  ASSIGN_OR_RETURN(const std::string credential, RandomSecret());
  // Before registering: from here on the member's services check keys made from the new
  // credential only, so whoever still holds keys of the old registration is refused.
  options_.install_credential(credential);
  while (true) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::OkStatus();
      register_context_ = &context;
    }
    absl::StatusOr<Registration> registered =
        RegisterOnce(*stub_, options_, credential, latest_generation(), context);
    {
      absl::MutexLock lock(&mu_);
      register_context_ = nullptr;
      if (registered.ok()) {
        member_id_ = registered->member_id;
        credential_ = credential;
        heartbeat_interval_ = registered->heartbeat_interval;
        ++registrations_;
        return absl::OkStatus();
      }
    }
    if (!Unanswered(registered.status().code())) {
      return Annotate(registered.status(), absl::StrCat("registering again after ", reason));
    }
    if (StoppingAfter(heartbeat_interval())) return absl::OkStatus();
  }
}

void ControllerClient::HeartbeatLoop() {
  while (!StoppingAfter(heartbeat_interval())) {
    if (options_.heartbeat_gate && !options_.heartbeat_gate()) continue;
    const grpc::Status status = HeartbeatOnce();
    if (status.ok()) {
      absl::MutexLock lock(&mu_);
      ++heartbeats_accepted_;
    }
  }
}

grpc::Status ControllerClient::HeartbeatOnce() {
  grpc::ClientContext context;
  SetDeadline(context, std::min(options_.rpc_timeout, heartbeat_interval() * 3));
  proto::HeartbeatRequest request;
  {
    absl::MutexLock lock(&mu_);
    context.AddMetadata(kMemberCredentialMetadata, credential_);
    request.set_member_id(member_id_);
  }
  request.set_generation(latest_generation());
  request.set_completed_steps(completed_steps_);
  proto::HeartbeatReply reply;
  const grpc::Status status = stub_->Heartbeat(&context, request, &reply);
  // FAILED_PRECONDITION: the generation moved on and the watch is about to say so;
  // UNAVAILABLE: the controller may come back. NOT_FOUND: this registration was dropped (or
  // forgotten); UNAUTHENTICATED: forgotten, and the id is someone else's now.
  if (!options_.install_credential) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      Fail(absl::NotFoundError(
          absl::StrCat("the controller dropped this member: ", status.error_message())));
    }
    return status;
  }
  if (status.error_code() != grpc::StatusCode::NOT_FOUND &&
      status.error_code() != grpc::StatusCode::UNAUTHENTICATED) {
    return status;
  }
  // The watch thread registers again once its stream ends: end it now if it still belongs to
  // the registration just refused (the controller ends it too, but need not have yet).
  absl::MutexLock lock(&mu_);
  if (member_id_ == request.member_id() && watch_context_ != nullptr) watch_context_->TryCancel();
  return status;
}

absl::Status ControllerClient::ReportFailedGeneration(uint64_t generation) {
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  Authenticate(context);
  proto::HeartbeatRequest request;
  request.set_member_id(member_id());
  request.set_generation(latest_generation());
  request.set_completed_steps(completed_steps_);
  request.set_failed_generation(generation);
  proto::HeartbeatReply reply;
  return Annotate(FromGrpcStatus(stub_->Heartbeat(&context, request, &reply)),
                  absl::StrCat("reporting generation ", generation, " failed to the controller"));
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

absl::Status ControllerClient::PutCheckpoint(uint64_t step, absl::Span<const float> parameters,
                                             absl::Span<const float> optimizer_state) {
  return PutCheckpoint(step, parameters.size(), parameters.size() + optimizer_state.size(),
                       StatePiecesOf(parameters, optimizer_state));
}

absl::Status ControllerClient::PutCheckpoint(uint64_t step, uint64_t parameters,
                                             uint64_t state_elements,
                                             const StatePieceReader& read) {
  grpc::ClientContext context;
  SetDeadline(context, options_.checkpoint_timeout);
  Authenticate(context);
  proto::CheckpointReply reply;
  std::unique_ptr<grpc::ClientWriter<proto::CheckpointSegment>> writer =
      stub_->PutCheckpoint(&context, &reply);
  proto::CheckpointSegment segment;
  segment.set_member_id(member_id());
  segment.set_step(step);
  segment.set_parameters(parameters);
  segment.set_state_elements(state_elements);
  std::vector<float> piece(std::min<uint64_t>(kCheckpointSegmentElements, state_elements));
  for (uint64_t offset = 0; offset < state_elements;) {
    const absl::Span<float> out =
        absl::MakeSpan(piece).first(std::min<uint64_t>(piece.size(), state_elements - offset));
    read(offset, out);
    segment.set_offset(offset);
    segment.set_payload(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
    offset += out.size();
    if (!writer->Write(segment)) break;  // Finish() says why
  }
  writer->WritesDone();
  return Annotate(FromGrpcStatus(writer->Finish()),
                  absl::StrCat("uploading the checkpoint of step ", step, " to the controller"));
}

absl::Status ControllerClient::GetCheckpoint(uint64_t step, absl::Span<float> parameters,
                                             absl::Span<float> optimizer_state) {
  grpc::ClientContext context;
  SetDeadline(context, options_.checkpoint_timeout);
  context.set_wait_for_ready(true);  // a controller restarting is waited for
  Authenticate(context);
  proto::CheckpointRequest request;
  request.set_member_id(member_id());
  request.set_step(step);
  std::unique_ptr<grpc::ClientReader<proto::CheckpointSegment>> reader =
      stub_->GetCheckpoint(&context, request);
  const uint64_t total = parameters.size() + optimizer_state.size();
  uint64_t received = 0;
  absl::Status bad;
  proto::CheckpointSegment segment;
  while (bad.ok() && reader->Read(&segment)) {
    const uint64_t count = segment.payload().size() / sizeof(float);
    if (segment.step() != step || segment.parameters() != parameters.size() ||
        segment.state_elements() != total || segment.offset() != received ||
        segment.payload().size() % sizeof(float) != 0 || count > total - received) {
      bad = absl::InternalError(absl::StrCat(
          "the controller's checkpoint segment (step ", segment.step(), ", offset ",
          segment.offset(), ", ", segment.payload().size(), " bytes of ", segment.state_elements(),
          " elements) does not continue step ", step, " at ", received, " of ", total));
      context.TryCancel();
      break;
    }
    WriteStatePiece(received, segment.payload().data(), count, parameters, optimizer_state);
    received += count;
  }
  const grpc::Status status = reader->Finish();
  if (!bad.ok()) return bad;
  if (!status.ok()) {
    return Annotate(FromGrpcStatus(status),
                    absl::StrCat("reading the checkpoint of step ", step, " from the controller"));
  }
  if (received != total) {
    return absl::InternalError(absl::StrCat("the controller sent ", received, " of the ", total,
                                            " elements of the checkpoint of step ", step));
  }
  return absl::OkStatus();
}

uint64_t ControllerClient::member_id() const {
  absl::MutexLock lock(&mu_);
  return member_id_;
}

int ControllerClient::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

int ControllerClient::heartbeats_accepted() const {
  absl::MutexLock lock(&mu_);
  return heartbeats_accepted_;
}

int ControllerClient::watch_streams_opened() const {
  absl::MutexLock lock(&mu_);
  return watch_streams_opened_;
}

absl::Status ControllerClient::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

absl::Status ValidateMemberOptions(const MemberOptions& member) {
  RETURN_IF_ERROR(Annotate(ParseHostPort(member.controller).status(), "--controller"));
  return ReadJoinToken(member.join_token_file).status();
}

absl::StatusOr<std::unique_ptr<ControllerClient>> RegisterMember(
    const MemberOptions& member, MemberRegistration registration, std::ostream& log,
    ControllerClient::AssignmentCallback on_assignment) {
  ControllerClientOptions client;
  ASSIGN_OR_RETURN(client.join_token, ReadJoinToken(member.join_token_file));
  client.controller = member.controller;
  client.register_timeout = member.register_timeout;
  client.role = registration.role;
  client.address = std::move(registration.address);
  client.credential = std::move(registration.credential);
  client.device = std::move(registration.device);
  client.security = std::move(registration.security);
  if (registration.install_credential) {
    // Dropped while alive (or forgotten by a controller restarted without its record): the
    // member registers again with a fresh credential and gets its place through the next
    // generation (the class comment above says how).
    client.install_credential = [install = std::move(registration.install_credential),
                                 names = NamesOf(registration.role),
                                 &log](const std::string& fresh) {
      install(fresh);
      log << names.log_name << ": the controller no longer knows this " << names.kind
          << "; registering again with a fresh credential\n";
      log.flush();
    };
  }
  return ControllerClient::Connect(client, std::move(on_assignment));
}

}  // namespace ringside::server
