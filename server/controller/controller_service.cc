#include "server/controller/controller_service.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/compression.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/reactor_writes.h"
#include "common/training_options.h"
#include "server/controller/job_spec.h"

namespace ringside::server {

// One member's watch stream. Holds itself (shared) until OnDone; the service keeps weak
// references, so a finished stream simply disappears from Notify(). Update() runs outside gRPC's
// reactions too (on the thread that changed the membership), where gRPC does not keep the call
// alive, so every write and the Finish go through ReactorWrites (common/reactor_writes.h): a
// Finish from another thread waits until a write being started has been issued.
class WatchReactor final : public grpc::ServerWriteReactor<proto::Assignment> {
 public:
  // `ticket`: the stream's place among the member's watches, held until the reactor goes.
  WatchReactor(const ControllerService& service, uint64_t member, StreamAdmission::Ticket ticket)
      : service_(service), member_(member), ticket_(std::move(ticket)) {}

  static std::shared_ptr<WatchReactor> Start(std::shared_ptr<WatchReactor> reactor) {
    absl::MutexLock lock(&reactor->mu_);
    reactor->self_ = reactor;
    return reactor;
  }

  // Sends the member's current assignment if it is newer than the last one sent; ends the
  // stream if the member was dropped.
  void Update() {
    std::optional<MemberAssignment> assignment = service_.membership().AssignmentOf(member_);
    if (!service_.membership().IsMember(member_)) {
      FinishOnce(grpc::Status(grpc::StatusCode::NOT_FOUND,
                              "this member was dropped (heartbeat timeout); register again"));
      return;
    }
    writes_.StartWrite([&]() -> const proto::Assignment* {
      mu_.AssertHeld();  // ReactorWrites runs it under the reactor's mutex
      if (!assignment.has_value() || assignment->generation <= sent_generation_ || writing_) {
        pending_ = writing_;  // re-check when the write in flight is done
        return nullptr;
      }
      writing_ = true;
      sent_generation_ = assignment->generation;
      Fill(*assignment, out_);
      return &out_;
    });
  }

  void OnWriteDone(bool ok) override {
    bool again;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      again = pending_;
      pending_ = false;
    }
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::UNAVAILABLE, "watcher stopped reading"));
      return;
    }
    if (again) Update();
  }

  void OnCancel() override { FinishOnce(grpc::Status::CANCELLED); }

  void OnDone() override {
    std::shared_ptr<WatchReactor> last;  // released after the lock: may delete this
    absl::MutexLock lock(&mu_);
    last = std::move(self_);
  }

 private:
  void FinishOnce(grpc::Status status) { writes_.Finish(std::move(status)); }

  void Fill(const MemberAssignment& assignment, proto::Assignment& out) const {
    out.Clear();
    out.set_generation(assignment.generation);
    out.set_mode(std::string(SyncModeName(assignment.mode)));
    out.set_rank(assignment.rank);
    out.set_shard(assignment.shard);
    for (const std::string& address : assignment.ring) out.add_ring(address);
    for (const std::string& address : assignment.shards) out.add_shards(address);
    *out.mutable_job() = service_.job();
    AddLinkKeys(assignment, out);
    if (service_.checkpoints() != nullptr) {
      out.set_checkpoint_step(service_.checkpoints()->newest_step());
      out.set_checkpoint_every(service_.checkpoint_every());
    }
  }

  // The keys this member presents in this generation: to its right neighbour's ring stream, to
  // every shard's Step and, as rank 0, to every shard's Load (common/auth.h).
  void AddLinkKeys(const MemberAssignment& assignment, proto::Assignment& out) const {
    if (assignment.rank < 0) return;
    const Membership& membership = service_.membership();
    const int world = static_cast<int>(assignment.ring_ids.size());
    const uint64_t right = assignment.ring_ids[(assignment.rank + 1) % world];
    if (std::optional<std::string> credential = membership.CredentialOf(right)) {
      out.set_ring_key(RingLinkKey(*credential, assignment.generation, assignment.rank));
    }
    for (uint64_t shard : assignment.shard_ids) {
      const std::string credential = membership.CredentialOf(shard).value_or("");
      out.add_shard_keys(ShardStepKey(credential, assignment.generation, assignment.rank));
      if (assignment.rank == 0) out.add_load_keys(ShardLoadKey(credential, assignment.generation));
    }
    for (const MemberAssignment::DepartedShard& departed : assignment.departed_shards) {
      out.add_departed_shards(departed.address);
      out.add_departed_load_keys(ShardLoadKey(departed.credential, assignment.generation));
    }
  }

  const ControllerService& service_;
  const uint64_t member_;
  StreamAdmission::Ticket ticket_;
  absl::Mutex mu_;
  ReactorWrites<WatchReactor> writes_{*this, mu_};  // every write and the one Finish
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t sent_generation_ ABSL_GUARDED_BY(mu_) = 0;
  proto::Assignment out_;  // the write in flight: filled under mu_, read by gRPC until written
  std::shared_ptr<WatchReactor> self_ ABSL_GUARDED_BY(mu_);
};

namespace {

// A watch refused before it starts (wrong credential): finishes at once.
class RefusedWatch final : public grpc::ServerWriteReactor<proto::Assignment> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

ControllerService::ControllerService(Membership& membership, proto::JobSpec job,
                                     absl::Duration heartbeat_timeout, std::ostream& log,
                                     StreamLimits upload_limits)
    : membership_(membership),
      job_(std::move(job)),
      heartbeat_timeout_(heartbeat_timeout),
      log_(log),
      upload_admission_(upload_limits),
      upload_watchdog_(upload_limits) {}

ControllerService::~ControllerService() = default;

absl::Status ControllerService::AuthenticateMember(const grpc::ServerContextBase& context,
                                                   uint64_t member) const {
  const std::optional<std::string> credential = membership_.CredentialOf(member);
  if (!credential.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("member ", member, " is unknown or was dropped; register again"));
  }
  if (!SecretsEqual(MetadataValue(context, kMemberCredentialMetadata), *credential)) {
    return absl::UnauthenticatedError(
        absl::StrCat("wrong or missing credential for member ", member,
                     "; a member presents the credential its registration returned"));
  }
  return absl::OkStatus();
}

void ControllerService::EnableCheckpoints(CheckpointKeeper* keeper, uint64_t every,
                                          prometheus::Counter* nonfinite_refused) {
  keeper_ = keeper;
  checkpoint_every_ = every;
  nonfinite_refused_ = nonfinite_refused;
}

void ControllerService::Log(const std::string& line) {
  absl::MutexLock lock(&log_mu_);
  log_ << line << "\n";
  log_.flush();
}

void ControllerService::Notify() {
  std::vector<std::shared_ptr<WatchReactor>> live;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::weak_ptr<WatchReactor>> kept;
    for (const auto& weak : watchers_) {
      if (auto watcher = weak.lock()) {
        live.push_back(watcher);
        kept.push_back(weak);
      }
    }
    watchers_ = std::move(kept);
  }
  for (const auto& watcher : live) watcher->Update();
}

grpc::ServerUnaryReactor* ControllerService::Register(grpc::CallbackServerContext* context,
                                                      const proto::RegisterRequest* request,
                                                      proto::RegisterReply* reply) {
  if (request->role() != proto::ROLE_WORKER && request->role() != proto::ROLE_PS) {
    return Done(context, absl::InvalidArgumentError("role must be ROLE_WORKER or ROLE_PS"));
  }
  const MemberRole role =
      request->role() == proto::ROLE_WORKER ? MemberRole::kWorker : MemberRole::kShard;
  absl::StatusOr<uint64_t> id =
      membership_.Register(request->join_token(), role, request->address(), clock_(),
                           request->member_credential(), request->generation_seen());
  {
    absl::MutexLock lock(&log_mu_);
    if (id.ok()) {
      log_ << "controller: member " << *id << " registered (" << QuoteForLog(request->address())
           << ", " << QuoteForLog(request->device());
      // A member that has seen a generation registers again (dropped while alive, or forgotten).
      if (request->generation_seen() > 0) {
        log_ << ", again: it had seen generation " << request->generation_seen();
      }
      log_ << ")\n";
    } else {
      log_ << "controller: refused registration from " << context->peer() << " ("
           << QuoteForLog(request->address()) << "): " << id.status() << "\n";
    }
    log_.flush();
  }
  if (!id.ok()) return Done(context, id.status());
  reply->set_member_id(*id);
  reply->set_heartbeat_interval_ms(
      static_cast<uint64_t>(absl::ToInt64Milliseconds(heartbeat_timeout_ / 3)));
  Notify();
  return Done(context, absl::OkStatus());
}

grpc::ServerWriteReactor<proto::Assignment>* ControllerService::Watch(
    grpc::CallbackServerContext* context, const proto::WatchRequest* request) {
  if (absl::Status status = AuthenticateMember(*context, request->member_id()); !status.ok()) {
    return new RefusedWatch(ToGrpcStatus(status));
  }
  absl::StatusOr<StreamAdmission::Ticket> ticket =
      watch_admission_.Admit(absl::StrCat("member ", request->member_id()), "Watch streams");
  if (!ticket.ok()) return new RefusedWatch(ToGrpcStatus(ticket.status()));
  std::shared_ptr<WatchReactor> reactor = WatchReactor::Start(
      std::make_shared<WatchReactor>(*this, request->member_id(), *std::move(ticket)));
  {
    absl::MutexLock lock(&mu_);
    watchers_.push_back(reactor);
  }
  reactor->Update();
  return reactor.get();
}

grpc::ServerUnaryReactor* ControllerService::Heartbeat(grpc::CallbackServerContext* context,
                                                       const proto::HeartbeatRequest* request,
                                                       proto::HeartbeatReply* /*reply*/) {
  if (absl::Status status = AuthenticateMember(*context, request->member_id()); !status.ok()) {
    return Done(context, status);
  }
  if (request->failed_generation() != 0) return ReportFailure(context, *request);
  const absl::Status status = membership_.Heartbeat(request->member_id(), request->generation(),
                                                    clock_(), request->completed_steps());
  if (status.ok()) AcceptHeldCheckpoint();
  return Done(context, status);
}

grpc::ServerUnaryReactor* ControllerService::ReportFailure(grpc::CallbackServerContext* context,
                                                           const proto::HeartbeatRequest& request) {
  const uint64_t failed = request.failed_generation();
  absl::StatusOr<uint64_t> next = membership_.ReportFailure(request.member_id(), failed);
  if (!next.ok()) return Done(context, next.status());
  if (*next != 0) {
    const std::optional<MemberAssignment> assignment =
        membership_.AssignmentOf(request.member_id());
    Log(absl::StrCat("controller: member ", request.member_id(), " (",
                     assignment.has_value() ? WorkerName(assignment->rank) : "a worker",
                     ") reports that generation ", failed, " failed; generation ", *next,
                     " of the same members follows"));
    Notify();
  }
  return Done(context, absl::OkStatus());
}

namespace {

// A shard that leaves may hold its range of the job's state (membership rule 12): where it can
// hand it over, and where not.
void LogShardHandOver(const proto::JobSpec& job, const MemberAssignment& was, uint64_t generation,
                      absl::Duration heartbeat_timeout, std::ostream& log) {
  const absl::StatusOr<TrainingOptions> training = TrainingOptionsOf(job, "");
  if (!training.ok() || was.mode != SyncMode::kPs ||
      !ShardsHoldTheState(training->staleness, training->backup_workers)) {
    return;
  }
  log << "controller: " << PsShardName(was.shard)
      << " held its range of the job's state (the shards hold it): ";
  if (was.shards.size() <= 1) {
    log << "it was the last shard and no shard takes its range over; the job resumes that range "
           "from the newest checkpoint\n";
    return;
  }
  log << "offered to generation " << generation << "'s " << WorkerName(0) << " at "
      << QuoteForLog(was.shards[static_cast<size_t>(was.shard)]) << " for the heartbeat timeout ("
      << heartbeat_timeout << ")\n";
}

}  // namespace

grpc::ServerUnaryReactor* ControllerService::Leave(grpc::CallbackServerContext* context,
                                                   const proto::LeaveRequest* request,
                                                   proto::LeaveReply* reply) {
  const uint64_t member = request->member_id();
  if (absl::Status status = AuthenticateMember(*context, member); !status.ok()) {
    return Done(context, status);
  }
  const std::optional<MemberAssignment> was = membership_.AssignmentOf(member);
  absl::StatusOr<uint64_t> generation = membership_.Leave(member, clock_());
  if (!generation.ok()) return Done(context, generation.status());
  {
    absl::MutexLock lock(&log_mu_);
    log_ << "controller: member " << member;
    if (was.has_value()) {
      log_ << (was->rank >= 0 ? absl::StrCat(" (worker-", was->rank, ")")
                              : absl::StrCat(" (shard ", was->shard, ")"));
    }
    log_ << " left";
    if (was.has_value() && was->rank >= 0) {
      log_ << " having completed " << request->completed_steps() << " steps";
    }
    log_ << "; generation " << *generation << " goes on without it\n";
    if (was.has_value() && was->shard >= 0) {
      LogShardHandOver(job_, *was, *generation, heartbeat_timeout_, log_);
    }
    log_.flush();
  }
  reply->set_generation(*generation);
  Notify();
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::SetMode(grpc::CallbackServerContext* context,
                                                     const proto::ModeRequest* request,
                                                     proto::ModeReply* reply) {
  if (operator_token_.empty()) {
    return Done(context, absl::PermissionDeniedError(
                             "this controller takes no mode switches: start it with "
                             "--operator_token_file, and pass the same file to ringside ctl"));
  }
  if (!SecretsEqual(MetadataValue(*context, kOperatorTokenMetadata), operator_token_)) {
    {
      absl::MutexLock lock(&log_mu_);
      log_ << "controller: refused a mode switch from " << QuoteForLog(context->peer())
           << ": wrong or missing operator token\n";
      log_.flush();
    }
    return Done(context,
                absl::UnauthenticatedError("wrong or missing operator token; pass ringside ctl the "
                                           "controller's --operator_token_file"));
  }
  absl::StatusOr<SyncMode> mode = ParseSyncMode(request->mode());
  if (!mode.ok()) return Done(context, mode.status());
  // A switch to the mode already running is a no-op: a regroup would cost the job a step's
  // worth of waiting for nothing.
  const Topology current = membership_.topology();
  if (current.generation != 0 && current.mode == *mode) {
    reply->set_generation(current.generation);
    reply->set_unchanged(true);
    return Done(context, absl::OkStatus());
  }
  // A compression that does not fit the new mode (top-k or sign in a ring) is refused, and the
  // job goes on in its mode.
  absl::StatusOr<Compression> compression =
      ParseCompression(job_.compression().empty() ? "none" : job_.compression());
  absl::Status fits = compression.status();
  if (fits.ok()) fits = CheckCompressionFitsMode(*compression, *mode);
  if (!fits.ok()) return Done(context, fits);
  absl::StatusOr<uint64_t> generation = membership_.SetMode(*mode);
  if (!generation.ok()) return Done(context, generation.status());
  reply->set_generation(*generation);
  Notify();
  return Done(context, absl::OkStatus());
}

}  // namespace ringside::server
