#include "server/ps/ps_daemon.h"

#include <signal.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/net.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "prometheus/registry.h"
#include "server/controller/controller_client.h"
#include "server/ps/ps_service.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

absl::Status ValidateShardOptions(const ShardOptions& options) {
  if (options.ps_shards < 1) return absl::InvalidArgumentError("--ps_shards must be >= 1");
  if (options.shard < 0 || options.shard >= options.ps_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard=", options.shard, " is not in [0, --ps_shards=", options.ps_shards, ")"));
  }
  if (!options.fault_at.empty() && options.fault_at != "leave_sent" &&
      options.fault_at != "handover") {
    return absl::InvalidArgumentError(absl::StrCat("--fault_at: unknown point '",
                                                   options.fault_at.substr(0, 32),
                                                   "'; known: leave_sent, handover"));
  }
  if (!options.member.controller.empty()) return ValidateMemberOptions(options.member);
  if (options.workers < 1) return absl::InvalidArgumentError("--workers must be >= 1");
  RETURN_IF_ERROR(ValidateSegmentBytes(options.segment_bytes));
  if (options.elements < 0) return absl::InvalidArgumentError("--elements must be >= 0");
  if (options.elements > 0) return absl::OkStatus();
  return ModelSpec::Parse(options.training.model, options.training.activation).status();
}

namespace {

// The whole initial parameter vector: the model's, or zeros for a benchmark shard.
absl::StatusOr<std::vector<float>> InitialVector(const ShardOptions& options) {
  if (options.elements > 0) return std::vector<float>(static_cast<size_t>(options.elements), 0.0f);
  ASSIGN_OR_RETURN(const ModelSpec spec,
                   ModelSpec::Parse(options.training.model, options.training.activation));
  return InitialParameters(spec, options.training.seed);
}

}  // namespace

namespace {

// `log` must outlive the factory's generations.
ShardMetricsFactory MetricsFactoryOf(Metrics& metrics, std::ostream& log) {
  ShardMetricsFactory factory;
  factory.links = [&metrics](int shard, int workers) {
    ShardLinkMetrics links;
    for (int w = 0; w < workers; ++w) {
      links.from_worker.push_back(
          metrics.LinkReceive(WorkerName(w), PsShardName(shard), SyncMode::kPs));
      links.to_worker.push_back(metrics.LinkSend(PsShardName(shard), WorkerName(w), SyncMode::kPs));
    }
    return links;
  };
  factory.shard.steps.wait_seconds = &metrics.PsWaitSeconds();
  factory.shard.steps.update_seconds = &metrics.StepSeconds(SyncMode::kPs, StepPhase::kUpdate);
  factory.shard.steps.steps = &metrics.StepsTotal(SyncMode::kPs);
  factory.shard.push_pull.staleness = &metrics.PsUpdateStaleness();
  factory.shard.push_pull.dropped = &metrics.PsDroppedPushes();
  // Refusals come from gRPC's threads, so their lines take a lock of their own.
  NonFiniteReport nonfinite;
  nonfinite.refused = &metrics.NonFiniteRefused("push");
  nonfinite.log = [&log, mu = std::make_shared<absl::Mutex>()](const std::string& line) {
    absl::MutexLock lock(mu.get());
    log << line << "\n";
    log.flush();
  };
  factory.shard.steps.nonfinite = nonfinite;
  factory.shard.push_pull.nonfinite = nonfinite;
  return factory;
}

absl::Status WriteReady(const ShardOptions& options, int port, int metrics_port,
                        const ElementRange& range) {
  if (options.ready_file.empty()) return absl::OkStatus();
  ReadyFile ready;
  ready.port = port;
  ready.metrics_port = metrics_port;
  ready.range_begin = static_cast<int64_t>(range.begin);
  ready.range_end = static_cast<int64_t>(range.end);
  return WriteFileAtomically(options.ready_file, ReadyFileText(ready));
}

// What one generation tells a shard: its index in the shard map, the job's shape and, for a
// fresh start, the initial parameters. A static shard has one fresh generation (from its flags)
// and serves the initial parameters itself, as every worker derives them; an elastic shard has
// one per controller generation and serves whatever state a worker Loads for it.
struct ShardAssignment {
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kPs;
  int shard = 0;
  int shards = 1;
  int workers = 1;
  uint64_t parameters = 0;  // of the whole model
  OptimizerConfig optimizer;
  int64_t backup_workers = 0;
  int64_t staleness = 0;
  std::optional<std::vector<float>> fresh_start;  // the whole initial vector
};

absl::StatusOr<ShardAssignment> StaticAssignment(const ShardOptions& options) {
  ShardAssignment assignment;
  assignment.generation = options.generation;
  assignment.shard = options.shard;
  assignment.shards = options.ps_shards;
  assignment.workers = options.workers;
  assignment.optimizer = options.training.optimizer;
  assignment.backup_workers = options.training.backup_workers;
  assignment.staleness = options.training.staleness;
  ASSIGN_OR_RETURN(assignment.fresh_start, InitialVector(options));
  assignment.parameters = assignment.fresh_start->size();
  return assignment;
}

absl::StatusOr<ShardAssignment> ElasticAssignment(const proto::Assignment& assignment,
                                                  const ShardOptions& options) {
  if (assignment.shard() < 0) {
    return absl::InvalidArgumentError("the assignment gives this member no shard index");
  }
  ASSIGN_OR_RETURN(const TrainingOptions training,
                   TrainingOptionsOf(assignment.job(), options.training.device));
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(training.model, training.activation));
  ShardAssignment out;
  out.generation = assignment.generation();
  ASSIGN_OR_RETURN(out.mode, ParseSyncMode(assignment.mode()));
  out.shard = assignment.shard();
  out.shards = assignment.shards_size();
  out.workers = assignment.ring_size();
  out.parameters = spec.parameter_count();
  out.optimizer = training.optimizer;
  out.backup_workers = training.backup_workers;
  out.staleness = training.staleness;
  return out;
}

// The one shard lifecycle step, for either kind of generation. Returns the range served.
absl::StatusOr<ElementRange> Follow(const ShardAssignment& assignment, Metrics& metrics,
                                    ParameterShardService& service,
                                    const ShardMetricsFactory& factory, std::ostream& log) {
  const ElementRange range = EvenRanges(assignment.parameters, assignment.shards)[assignment.shard];
  if (assignment.fresh_start.has_value()) {
    const std::vector<float>& all = *assignment.fresh_start;
    ShardGeneration generation;
    generation.range = range;
    ASSIGN_OR_RETURN(
        generation.shard,
        Shard::Start(
            ShardSpec{assignment.generation, assignment.workers, assignment.shard,
                      assignment.optimizer, assignment.staleness, assignment.backup_workers},
            {all.begin() + range.begin, all.begin() + range.end}, factory.shard));
    generation.links = factory.links(assignment.shard, assignment.workers);
    service.Serve(std::move(generation));
  } else {
    service.SetJob(ShardJob{assignment.shard, range, assignment.optimizer, assignment.generation,
                            assignment.backup_workers, assignment.staleness});
  }
  metrics.ExportMembership(assignment.workers, assignment.generation, assignment.mode);
  log << PsShardName(assignment.shard) << ": generation " << assignment.generation << ", "
      << SyncModeName(assignment.mode) << " mode, " << assignment.workers
      << " workers; owns parameters [" << range.begin << ", " << range.end << ") of "
      << assignment.parameters << "\n";
  log.flush();
  return range;
}

// An elastic shard follows every generation the controller assigns it, on the controller
// client's watch thread; one it cannot serve is logged, and the next may fix it.
ControllerClient::AssignmentCallback FollowAssignments(const ShardOptions& options,
                                                       Metrics& metrics,
                                                       ParameterShardService& service,
                                                       const ShardMetricsFactory& factory,
                                                       std::ostream& log) {
  return [&options, &metrics, &service, &factory, &log](const proto::Assignment& assignment) {
    absl::StatusOr<ShardAssignment> next = ElasticAssignment(assignment, options);
    const absl::Status status =
        next.ok() ? Follow(*next, metrics, service, factory, log).status() : next.status();
    if (!status.ok()) {
      log << "ps: cannot serve generation " << assignment.generation() << ": " << status << "\n";
    }
  };
}

// A shard told to stop (SIGTERM: a drain, a rolling restart) leaves the job, so the workers
// regroup at once instead of at the heartbeat timeout. Where the workers hold the job's state
// (ring mode, synchronous ps steps) nothing is lost. Where the shards hold it (bounded
// staleness, async, backup workers) the shard hands its range over: it keeps serving it until
// the next generation's rank 0 has read it (ParameterShard.ReadState, with the read key the
// controller gives that worker for this departed shard: membership rule 12), at most for the
// heartbeat timeout, for which the controller offers it; a second signal ends the wait. The last
// shard has nobody to hand it to: the job resumes its range from the newest checkpoint, as
// after a crash, and the log says so.
void LeaveTheJob(ControllerClient& controller, const ShardOptions& options,
                 const ParameterShardService& service, const TerminationSignals& signals,
                 std::ostream& log) {
  const std::optional<proto::Assignment> last = controller.latest();
  bool holds_state = false;
  if (last.has_value()) {
    const absl::StatusOr<ShardAssignment> assignment = ElasticAssignment(*last, options);
    holds_state = assignment.ok() && assignment->mode == SyncMode::kPs &&
                  ShardsHoldTheState(assignment->staleness, assignment->backup_workers);
  }
  const std::shared_ptr<const ShardGeneration> served = service.current();
  const absl::Duration offered = 3 * controller.heartbeat_interval();  // the heartbeat timeout
  const absl::StatusOr<uint64_t> generation = controller.Leave();
  log << "ps: stopped by signal " << signals.signal() << "; ";
  if (generation.ok()) {
    log << "left the job, which goes on in generation " << *generation << " without it\n";
  } else {
    log << "could not leave the job (" << generation.status()
        << "); the controller drops this member at its heartbeat timeout\n";
  }
  log.flush();
  if (options.fault_at == "leave_sent") raise(SIGKILL);
  if (!holds_state || served == nullptr || served->shard->push_pull() == nullptr) return;
  if (!generation.ok() || last->shards_size() <= 1) {
    log << "ps: this shard held the authoritative state of its range (the job's shards hold it) "
           "and has nobody to hand it to ("
        << (generation.ok() ? "it was the last shard" : "the controller did not take its leave")
        << "): the job resumes that range from the newest checkpoint\n";
    log.flush();
    return;
  }
  const uint64_t served_generation = served->shard->identity().generation;
  log << "ps: handing over its range's state (step "
      << served->shard->push_pull()->ResumeState().step << "): serving it to generation "
      << *generation << "'s " << WorkerName(0) << " for up to " << offered << "\n";
  log.flush();
  const absl::Time deadline = absl::Now() + offered;
  bool read = false;
  while (!read && absl::Now() < deadline && signals.count() < 2) {
    read = service.AwaitStateRead(served_generation,
                                  std::min(deadline, absl::Now() + absl::Milliseconds(100)));
  }
  if (read) {
    log << "ps: handed its range's state over; exiting\n";
  } else {
    log << "ps: "
        << (signals.count() >= 2 ? "a second signal ended the hand-over"
                                 : "nobody read its range's state in time")
        << ": the job resumes that range from the newest checkpoint\n";
  }
  log.flush();
}

}  // namespace

absl::Status RunShard(const ShardOptions& options, const TerminationSignals& signals,
                      std::ostream& log) {
  RETURN_IF_ERROR(ValidateShardOptions(options));
  const bool elastic = !options.member.controller.empty();
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  const ShardMetricsFactory factory = MetricsFactoryOf(metrics, log);
  ParameterShardService service(static_cast<uint64_t>(options.segment_bytes), factory);
  if (options.fault_at == "handover") service.SetHandOverHook([] { raise(SIGKILL); });
  ElementRange range;
  if (!elastic) {
    ASSIGN_OR_RETURN(const ShardAssignment assignment, StaticAssignment(options));
    ASSIGN_OR_RETURN(range, Follow(assignment, metrics, service, factory, log));
  }
  // An elastic shard's own secret (common/auth.h), set before anything is served: every Step and
  // Load must then present the controller's link key from the first call on.
  std::string credential;
  if (elastic) {
    ASSIGN_OR_RETURN(credential, RandomSecret());
    service.SetMemberCredential(credential);
  }
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}, options.security));
  ASSIGN_OR_RETURN(const std::string address,
                   AdvertisedAddress(options.member.advertise, options.listen, server.port));
  log << "ps: ParameterShard on " << address << " (" << options.security.Describe()
      << "), metrics at " << metrics_server->url() << "\n";
  log.flush();
  std::unique_ptr<ControllerClient> controller;
  if (elastic) {
    MemberRegistration registration;
    registration.role = proto::ROLE_PS;
    registration.address = address;
    registration.credential = credential;
    registration.security = options.security;
    // Registered again, the shard gets its place in the shard map back at its address, and the
    // next regroup loads the job's state into it.
    registration.install_credential = [&service](const std::string& fresh) {
      service.SetMemberCredential(fresh);
    };
    ASSIGN_OR_RETURN(controller,
                     RegisterMember(options.member, std::move(registration), log,
                                    FollowAssignments(options, metrics, service, factory, log)));
    log << "ps: registered with the controller at " << options.member.controller << " as member "
        << controller->member_id() << "\n";
    log.flush();
  }
  RETURN_IF_ERROR(WriteReady(options, server.port, metrics_server->port(), range));
  while (!signals.WaitFor(absl::Milliseconds(200))) {
    if (controller != nullptr && !controller->failure().ok()) return controller->failure();
  }
  std::shared_ptr<const ShardGeneration> last = service.current();
  log << "ps: stopping after step " << (last ? last->shard->step() : 0) << "\n";
  server.StopReportingReady();
  if (controller != nullptr) LeaveTheJob(*controller, options, service, signals, log);
  return absl::OkStatus();
}

}  // namespace ringside::server
