#include "worker/worker_daemon.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
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
#include "common/status_macros.h"
#include "prometheus/registry.h"
#include "ring/ring_member.h"
#include "server/controller/controller_client.h"
#include "server/controller/job_spec.h"
#include "server/probe/link_probe.h"
#include "server/ps/ps_client.h"
#include "worker/assignment_source.h"
#include "worker/controller_assignments.h"
#include "worker/elastic_training.h"
#include "worker/member_profile.h"

namespace ringside::worker {
namespace {

bool IsElastic(const WorkerOptions& options) { return !options.elastic.member.controller.empty(); }

// Who the watch thread tells about a superseded generation (the trainer exists only once the
// first assignment is in).
class SupersedeRelay {
 public:
  void Attach(ElasticTrainer* trainer) {
    absl::MutexLock lock(&mu_);
    trainer_ = trainer;
  }
  // Called on the watch thread for every assignment. Any new generation ends the old one's
  // collective or ps step in flight: a peer that adopted the new generation at its step boundary
  // will never join the old step, and waiting for the deadline would stall everyone.
  void OnAssignment(uint64_t generation) {
    absl::MutexLock lock(&mu_);
    if (trainer_ != nullptr) trainer_->Supersede(generation);
  }

 private:
  absl::Mutex mu_;
  ElasticTrainer* trainer_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Everything a running worker owns. Members are destroyed in reverse order: the controller
// client first (its threads call the relay and the ring member), then the gRPC server, before
// the ring member whose service it runs.
struct RunningWorker {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Metrics metrics{registry};
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<ring::RingMember> member;        // none in a static ps cluster
  std::unique_ptr<probe::LinkProbeService> probe;  // with --probe_token_file only
  StartedServer server;
  std::string address;     // the RingPeer address others dial; empty when none is served
  std::string credential;  // an elastic member's own secret (common/auth.h)
  SupersedeRelay relay;
  std::unique_ptr<server::ControllerClient> controller;  // elastic only
  std::unique_ptr<AssignmentSource> assignments;
};

absl::Status ValidateElasticOptions(const WorkerOptions& options) {
  RETURN_IF_ERROR(server::ValidateMemberOptions(options.elastic.member));
  if (options.listen.empty()) {
    return absl::InvalidArgumentError(
        "--listen: an elastic worker serves RingPeer for its ring neighbours; give HOST:PORT "
        "(port 0: any free port)");
  }
  if (options.elastic.regroup_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--regroup_timeout must be positive");
  }
  return absl::OkStatus();
}

// --probe_token_file's link probe, with the secret read from the file: it echoes, and profiles
// this process on --device.
absl::StatusOr<std::unique_ptr<probe::LinkProbeService>> MakeProbeService(
    const WorkerOptions& options) {
  ASSIGN_OR_RETURN(const std::string token,
                   server::ReadTokenFile(options.probe_token_file, "--probe_token_file"));
  return std::make_unique<probe::LinkProbeService>(
      token, [device = options.training.device](const proto::ProfileRequest& request) {
        return ProfileThisProcess(request, device);
      });
}

// Metrics, and the ring: an elastic member always has one (generation 0 until assigned:
// segments of the first generation wait in the inbox); a static ring is --peers; a static ps
// cluster has none.
absl::Status StartServing(const WorkerOptions& options, RunningWorker& worker) {
  const bool elastic = IsElastic(options);
  ASSIGN_OR_RETURN(worker.metrics_server,
                   MetricsServer::Start(options.metrics_listen, worker.registry));
  if (options.predicted_ring_step_seconds > 0) {
    worker.metrics.PredictedStepSeconds(SyncMode::kRing).Set(options.predicted_ring_step_seconds);
  }
  if (options.predicted_ps_step_seconds > 0) {
    worker.metrics.PredictedStepSeconds(SyncMode::kPs).Set(options.predicted_ps_step_seconds);
  }
  std::string listen = options.listen;
  // Set before anything is served, so the left neighbour must present the controller's link key
  // from the first stream on.
  if (elastic) {
    ASSIGN_OR_RETURN(worker.credential, RandomSecret());
  }
  if (elastic || options.cluster.mode == SyncMode::kRing) {
    worker.member = std::make_unique<ring::RingMember>(ring::RingTopology{0, 1, 0}, &worker.metrics,
                                                       options.security);
    worker.member->SetMemberCredential(worker.credential);
    if (listen.empty()) listen = options.cluster.peers[options.cluster.rank];
  }
  if (!options.probe_token_file.empty()) {
    if (listen.empty()) {
      return absl::InvalidArgumentError(
          "--probe_token_file: a static ps worker serves nothing; give --listen=HOST:PORT for "
          "the probe");
    }
    ASSIGN_OR_RETURN(worker.probe, MakeProbeService(options));
  }
  if (listen.empty()) return absl::OkStatus();
  std::vector<grpc::Service*> services;
  if (worker.member != nullptr) services.push_back(worker.member->service());
  if (worker.probe != nullptr) services.push_back(worker.probe.get());
  ASSIGN_OR_RETURN(worker.server, StartServer(listen, services, options.security));
  // Elastic peers dial what the controller hands out; a static cluster's addresses are the
  // command line's, so only an elastic member needs a dialable advertised address.
  if (!elastic) {
    worker.address = listen;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(worker.address, server::AdvertisedAddress(options.elastic.member.advertise,
                                                             listen, worker.server.port));
  return absl::OkStatus();
}

// Registers with the controller; generations come from its watch stream.
absl::Status JoinElasticJob(const WorkerOptions& options, RunningWorker& worker,
                            std::ostream& log) {
  server::MemberRegistration registration;
  registration.role = proto::ROLE_WORKER;
  registration.address = worker.address;
  registration.credential = worker.credential;
  registration.device = options.training.device;
  registration.security = options.security;
  // Registered again, the worker rejoins at the next generation, as a late joiner does; it
  // keeps its state meanwhile, and the regroup's census weighs it.
  registration.install_credential = [ring = worker.member.get()](const std::string& fresh) {
    ring->SetMemberCredential(fresh);
  };
  SupersedeRelay& relay = worker.relay;
  ASSIGN_OR_RETURN(worker.controller,
                   server::RegisterMember(options.elastic.member, std::move(registration), log,
                                          [&relay](const proto::Assignment& assignment) {
                                            relay.OnAssignment(assignment.generation());
                                          }));
  log << "worker: RingPeer on " << worker.address << " (" << options.security.Describe()
      << "), registered with the controller at " << options.elastic.member.controller
      << " as member " << worker.controller->member_id() << ", metrics at "
      << worker.metrics_server->url() << "\n";
  worker.assignments =
      std::make_unique<ControllerAssignments>(*worker.controller, options.training.device);
  return absl::OkStatus();
}

// A static cluster's one generation, from the command line.
GenerationAssignment StaticAssignment(const WorkerOptions& options) {
  GenerationAssignment assignment;
  assignment.generation = 1;
  assignment.mode = options.cluster.mode;
  assignment.rank = options.cluster.rank;
  assignment.world = WorldOf(options.cluster);
  if (options.cluster.mode == SyncMode::kRing) assignment.ring = options.cluster.peers;
  assignment.shards = options.cluster.ps;
  assignment.job = options.training;
  return assignment;
}

// A static cluster: its one generation is the command line's.
void FollowStaticCluster(const WorkerOptions& options, RunningWorker& worker, std::ostream& log) {
  const StaticClusterOptions& cluster = options.cluster;
  log << WorkerName(cluster.rank) << ": static " << SyncModeName(cluster.mode) << " cluster, "
      << (worker.member != nullptr ? absl::StrCat("RingPeer on ", worker.address, ", ring of ")
                                   : absl::StrCat(cluster.ps.size(), " shards, "))
      << WorldOf(cluster) << " workers, metrics at " << worker.metrics_server->url() << "\n";
  worker.assignments = std::make_unique<FixedAssignment>(StaticAssignment(options));
}

absl::Status WriteReadyFile(const WorkerOptions& options, const RunningWorker& worker) {
  if (options.outputs.ready_file.empty()) return absl::OkStatus();
  return WriteFileAtomically(
      options.outputs.ready_file,
      ReadyFileText({worker.server.port, worker.metrics_server->port(), worker.address}));
}

ElasticOptions TrainerOptions(const WorkerOptions& options, WorkerOutputFiles& outputs) {
  ElasticOptions training;
  training.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  training.ps_window_bytes = static_cast<uint64_t>(options.ps_window_bytes);
  training.timeout = options.timeout;
  training.regroup_timeout = options.elastic.regroup_timeout;
  training.security = options.security;
  training.stay_after_finish = IsElastic(options);
  if (options.testing.fault.has_value()) training.fault = KillSelfAt(*options.testing.fault);
  training.hold_for_new_generation_after = options.testing.hold_at;
  training.timeline = outputs.timeline();
  training.evaluations = outputs.EvaluationSink();
  // Beside the evaluation file, which the worker writes anyway.
  if (training.evaluations) {
    training.evaluation_snapshot_prefix = options.outputs.eval_file + ".snapshots-";
  }
  return training;
}

// The job is done: its timeline, the log line, the parameters and the result file.
absl::Status ReportResult(const WorkerOptions& options, const ElasticResult& result,
                          int metrics_port, WorkerOutputFiles& outputs, std::ostream& log) {
  RETURN_IF_ERROR(outputs.WriteTimeline(result.slot.rank));
  const std::string name = WorkerName(result.slot.rank);
  const TrainingResult& training = result.training;
  log << name << ": trained " << training.steps << " steps (generation " << result.generation
      << ", " << result.slot.world << " workers); full data set: loss "
      << training.final_eval.mean_loss << ", accuracy " << training.final_eval.accuracy << "\n";
  RETURN_IF_ERROR(outputs.WriteResult(result, metrics_port));
  if (IsElastic(options)) log << name << ": job done; staying in the job until SIGINT/SIGTERM\n";
  log.flush();
  return absl::OkStatus();
}

// An elastic worker told to stop (SIGTERM: a drain, a rolling restart) leaves at the step
// boundary it stopped at, so the others regroup at once instead of at the heartbeat timeout. A
// leave that fails is said and changes nothing else: the controller then drops the member when
// its heartbeats stop, as before.
void LeaveTheJob(server::ControllerClient& controller, const TerminationSignals& signals,
                 const FaultHook& fault, std::ostream& log) {
  const std::optional<proto::Assignment> last = controller.latest();
  const std::string name =
      last.has_value() && last->rank() >= 0 ? WorkerName(last->rank()) : std::string("worker");
  const absl::StatusOr<uint64_t> generation = controller.Leave();
  log << name << ": stopped by signal " << signals.signal() << "; ";
  if (generation.ok()) {
    log << "left the job, which goes on in generation " << *generation << " without it\n";
  } else {
    log << "could not leave the job (" << generation.status()
        << "); the controller drops this member at its heartbeat timeout\n";
  }
  log.flush();
  if (fault) fault("leave_sent", static_cast<int64_t>(controller.completed_steps()));
}

// Trains until the job is done (a static worker, then lingering if asked) or a signal arrives
// (an elastic one, which then leaves the job).
absl::Status Train(const WorkerOptions& options, RunningWorker& worker, WorkerOutputFiles& outputs,
                   const TerminationSignals& signals, std::ostream& log) {
  ElasticTrainer trainer(*worker.assignments, worker.member.get(), worker.metrics,
                         TrainerOptions(options, outputs), log, outputs.TraceSink(log));
  worker.relay.Attach(&trainer);
  bool finished = false;
  const absl::Status status = trainer.Run(signals.notification(), [&](const ElasticResult& result) {
    finished = true;
    return ReportResult(options, result, worker.metrics_server->port(), outputs, log);
  });
  worker.relay.Attach(nullptr);
  outputs.WriteTimelineAtExit(log);  // regroups after the job, too
  RETURN_IF_ERROR(status);
  if (IsElastic(options)) {
    if (signals.received()) {
      worker.server.StopReportingReady();
      LeaveTheJob(
          *worker.controller, signals,
          options.testing.fault.has_value() ? KillSelfAt(*options.testing.fault) : FaultHook(),
          log);
    }
    return absl::OkStatus();
  }
  if (!finished) return absl::CancelledError("stopped by a signal before the job ended");
  if (options.cluster.linger && !signals.received()) {
    log << WorkerName(options.cluster.rank) << ": job done; serving metrics until SIGINT/SIGTERM\n";
    log.flush();
    signals.Wait();
  }
  return absl::OkStatus();
}

}  // namespace

int WorldOf(const StaticClusterOptions& cluster) {
  return cluster.mode == SyncMode::kRing ? static_cast<int>(cluster.peers.size()) : cluster.workers;
}

absl::Status ValidateWorkerOptions(const WorkerOptions& options) {
  RETURN_IF_ERROR(ValidateSegmentBytes(options.segment_bytes));
  RETURN_IF_ERROR(server::CheckPsWindowBytes(options.ps_window_bytes));
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout must be positive");
  }
  if (options.training.steps < 1) return absl::InvalidArgumentError("--steps must be >= 1");
  RETURN_IF_ERROR(ModelSpec::Parse(options.training.model, options.training.activation).status());
  if (!options.elastic.member.controller.empty()) return ValidateElasticOptions(options);
  const bool ring = options.cluster.mode == SyncMode::kRing;
  const std::vector<std::string>& addresses = ring ? options.cluster.peers : options.cluster.ps;
  if (addresses.empty()) {
    return absl::InvalidArgumentError(
        ring ? "--peers: give every worker's RingPeer address, e.g. "
               "--peers=127.0.0.1:7001,127.0.0.1:7002 (the same list, in rank order, on every "
               "worker)"
             : "--ps: give every parameter-server shard's address, in shard order");
  }
  for (const std::string& address : addresses) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(address).status(), ring ? "--peers" : "--ps"));
  }
  if (!ring && options.cluster.workers < 1) {
    return absl::InvalidArgumentError("--workers: ps mode needs the number of workers");
  }
  const int world = WorldOf(options.cluster);
  if (options.cluster.rank < 0 || options.cluster.rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank=", options.cluster.rank, " is not in [0, ", world, ")",
                     ring ? ", the ranks --peers names" : ", the ranks --workers allows"));
  }
  return absl::OkStatus();
}

namespace {

// A worker given --probe_token_file but no cluster (no --peers, --ps or --controller) is a probe
// member: it serves only the link probe, until a termination signal, so `ringside plan
// --probe_targets` can measure a pod's or a lab host's link before any job starts there.
bool IsProbeMember(const WorkerOptions& options) {
  return !IsElastic(options) && options.cluster.peers.empty() && options.cluster.ps.empty() &&
         !options.probe_token_file.empty();
}

absl::Status ServeProbeOnly(const WorkerOptions& options, const TerminationSignals& signals,
                            std::ostream& log) {
  if (options.listen.empty()) {
    return absl::InvalidArgumentError(
        "--probe_token_file without --peers, --ps or --controller serves the link probe only: "
        "give --listen=HOST:PORT");
  }
  ASSIGN_OR_RETURN(const std::unique_ptr<probe::LinkProbeService> service,
                   MakeProbeService(options));
  ASSIGN_OR_RETURN(StartedServer server,
                   StartServer(options.listen, {service.get()}, options.security));
  if (!options.outputs.ready_file.empty()) {
    RETURN_IF_ERROR(
        WriteFileAtomically(options.outputs.ready_file, ReadyFileText({server.port, 0, ""})));
  }
  log << "serving the link probe on port " << server.port << " until SIGINT or SIGTERM\n";
  log.flush();
  signals.Wait();
  return absl::OkStatus();
}

}  // namespace

absl::Status RunWorker(const WorkerOptions& options, const TerminationSignals& signals,
                       std::ostream& log) {
  if (IsProbeMember(options)) return ServeProbeOnly(options, signals, log);
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  RunningWorker worker;
  RETURN_IF_ERROR(StartServing(options, worker));
  ASSIGN_OR_RETURN(std::unique_ptr<WorkerOutputFiles> outputs,
                   WorkerOutputFiles::Open(options.outputs, options.cluster.rank));
  if (IsElastic(options)) {
    RETURN_IF_ERROR(JoinElasticJob(options, worker, log));
  } else {
    FollowStaticCluster(options, worker, log);
  }
  log.flush();
  RETURN_IF_ERROR(WriteReadyFile(options, worker));
  return Train(options, worker, *outputs, signals, log);
}

}  // namespace ringside::worker
