#include "worker/worker_daemon.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/checksum.h"
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
#include "worker/controller_assignments.h"
#include "worker/elastic_training.h"
#include "worker/timeline.h"

namespace ringside::worker {
namespace {

// Everything a running worker owns; members are destroyed in reverse order, so the gRPC server
// stops before the ring member whose service it runs.
struct RunningWorker {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Metrics metrics{registry};
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<ring::RingMember> member;  // none in a static ps cluster
  StartedServer server;
};

// Writes --params_out (raw float32) atomically (nothing when it is empty).
absl::Status WriteParameters(const WorkerOptions& options, absl::Span<const float> parameters) {
  if (options.outputs.params_out.empty()) return absl::OkStatus();
  return WriteFileAtomically(options.outputs.params_out,
                             absl::string_view(reinterpret_cast<const char*>(parameters.data()),
                                               parameters.size() * sizeof(float)));
}

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

// The worker's timeline and where it goes; written on the training thread only.
class TimelineWriter {
 public:
  static constexpr absl::Duration kEvery = absl::Seconds(2);

  static absl::StatusOr<std::unique_ptr<TimelineWriter>> Create(const WorkerOptions& options) {
    if (options.outputs.timeline_file.empty()) return std::unique_ptr<TimelineWriter>();
    if (options.outputs.timeline_capacity < 4 || options.outputs.timeline_capacity > 1'000'000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--timeline_capacity=", options.outputs.timeline_capacity,
                       ": keep between 4 (one step) and 1000000 events"));
    }
    auto writer = std::unique_ptr<TimelineWriter>(new TimelineWriter(options));
    // At once, so a path that cannot be written fails the start, naming the flag.
    RETURN_IF_ERROR(Annotate(writer->Write(), "--timeline_file"));
    return writer;
  }
  Timeline* timeline() { return &timeline_; }
  absl::Status Write() {
    last_ = absl::Now();
    return WriteWorkerTimeline(timeline_, rank_, path_);
  }
  void WriteIfDue(int rank, std::ostream& log) {
    rank_ = rank;
    if (absl::Now() - last_ < kEvery) return;
    if (absl::Status status = Write(); !status.ok()) {
      log << WorkerName(rank) << ": --timeline_file not written: " << status << "\n";
    }
  }
  void set_rank(int rank) { rank_ = rank; }

 private:
  explicit TimelineWriter(const WorkerOptions& options)
      : path_(options.outputs.timeline_file),
        timeline_(static_cast<size_t>(options.outputs.timeline_capacity)),
        rank_(options.cluster.rank) {}
  const std::string path_;
  Timeline timeline_;
  int rank_;
  absl::Time last_ = absl::InfinitePast();
};

StepTraceSink TraceTo(std::ofstream* out, TimelineWriter* timeline, std::ostream& log) {
  if (out == nullptr && timeline == nullptr) return nullptr;
  return [out, timeline, &log](const StepTrace& step) {
    if (timeline != nullptr) timeline->WriteIfDue(step.slot.rank, log);
    if (out == nullptr) return;
    *out << StepTraceLineText(
                {step.step, step.generation, std::string(SyncModeName(step.mode)), step.slot.rank,
                 step.slot.world, step.loss, step.seconds, Fnv1aHex(step.parameters),
                 absl::ToDoubleSeconds(step.timing.compute),
                 absl::ToDoubleSeconds(step.timing.sync), absl::ToDoubleSeconds(step.timing.update),
                 absl::ToDoubleSeconds(step.end - absl::UnixEpoch())})
         << "\n";
    out->flush();
  };
}

absl::Status ReportResult(const WorkerOptions& options, const ElasticResult& result,
                          int metrics_port, bool elastic, std::ostream& log) {
  const std::string name = WorkerName(result.slot.rank);
  const TrainingResult& training = result.training;
  log << name << ": trained " << training.steps << " steps (generation " << result.generation
      << ", " << result.slot.world << " workers); full data set: loss "
      << training.final_eval.mean_loss << ", accuracy " << training.final_eval.accuracy << "\n";
  RETURN_IF_ERROR(WriteParameters(options, training.parameters));
  if (!options.outputs.result_file.empty()) {
    TrainResultFile file;
    file.rank = result.slot.rank;
    file.world = result.slot.world;
    file.generation = result.generation;
    file.mode = std::string(SyncModeName(result.mode));
    file.steps = training.steps;
    file.parameters = static_cast<int64_t>(training.parameters.size());
    file.final_loss = training.final_eval.mean_loss;
    file.accuracy = training.final_eval.accuracy;
    file.checksum = Fnv1aHex(training.parameters);
    file.metrics_port = metrics_port;
    RETURN_IF_ERROR(WriteFileAtomically(options.outputs.result_file, TrainResultText(file)));
  }
  if (elastic) log << name << ": job done; staying in the job until SIGINT/SIGTERM\n";
  log.flush();
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

absl::Status ValidateElasticOptions(const WorkerOptions& options) {
  RETURN_IF_ERROR(
      Annotate(ParseHostPort(options.elastic.member.controller).status(), "--controller"));
  RETURN_IF_ERROR(server::ReadJoinToken(options.elastic.member.join_token_file).status());
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

absl::Status RunTrainingWorker(const WorkerOptions& options, const TerminationSignals& signals,
                               std::ostream& log) {
  const bool elastic = !options.elastic.member.controller.empty();
  RunningWorker worker;
  ASSIGN_OR_RETURN(worker.metrics_server,
                   MetricsServer::Start(options.metrics_listen, worker.registry));
  // The ring: an elastic member always has one (generation 0 until assigned: segments of the
  // first generation wait in the inbox); a static ring is --peers; a static ps cluster has none.
  std::string listen = options.listen;
  // An elastic member's own secret (common/auth.h), set before anything is served, so its left
  // neighbour must present the controller's link key from the first stream on.
  std::string credential;
  if (elastic) {
    ASSIGN_OR_RETURN(credential, RandomSecret());
  }
  if (elastic || options.cluster.mode == SyncMode::kRing) {
    worker.member = std::make_unique<ring::RingMember>(ring::RingTopology{0, 1, 0}, &worker.metrics,
                                                       options.security);
    worker.member->SetMemberCredential(credential);
    if (listen.empty()) listen = options.cluster.peers[options.cluster.rank];
  }
  std::string address;
  if (!listen.empty()) {
    std::vector<grpc::Service*> services;
    if (worker.member != nullptr) services.push_back(worker.member->service());
    ASSIGN_OR_RETURN(worker.server, StartServer(listen, services, options.security));
    // Elastic peers dial what the controller hands out; a static cluster's addresses are the
    // command line's, so only an elastic member needs a dialable advertised address.
    if (elastic) {
      ASSIGN_OR_RETURN(address, server::AdvertisedAddress(options.elastic.member.advertise, listen,
                                                          worker.server.port));
    } else {
      address = listen;
    }
  }
  std::ofstream trace;
  if (!options.outputs.trace_file.empty()) {
    trace.open(options.outputs.trace_file, std::ios::app);
    if (!trace) {
      return absl::InvalidArgumentError(
          absl::StrCat("--trace_file: cannot open ", options.outputs.trace_file, " for appending"));
    }
  }

  ASSIGN_OR_RETURN(std::unique_ptr<TimelineWriter> timeline, TimelineWriter::Create(options));
  // Written on the evaluator's thread only; outlives the trainer, which owns that thread.
  std::ofstream evaluations;
  if (!options.outputs.eval_file.empty()) {
    evaluations.open(options.outputs.eval_file, std::ios::app);
    if (!evaluations) {
      return absl::InvalidArgumentError(
          absl::StrCat("--eval_file: cannot open ", options.outputs.eval_file, " for appending"));
    }
  }

  SupersedeRelay relay;
  std::unique_ptr<server::ControllerClient> controller;
  std::unique_ptr<AssignmentSource> assignments;
  if (elastic) {
    ASSIGN_OR_RETURN(const std::string token,
                     server::ReadJoinToken(options.elastic.member.join_token_file));
    server::ControllerClientOptions client;
    client.controller = options.elastic.member.controller;
    client.join_token = token;
    client.role = proto::ROLE_WORKER;
    client.address = address;
    client.credential = credential;
    client.device = options.training.device;
    client.register_timeout = options.elastic.member.register_timeout;
    client.security = options.security;
    // Dropped while alive (or forgotten by a controller restarted without its record): the
    // worker registers again with a fresh credential and rejoins at the next generation, as a
    // late joiner does; it keeps its state meanwhile, and the regroup's census weighs it.
    client.install_credential = [ring = worker.member.get(), &log](const std::string& fresh) {
      ring->SetMemberCredential(fresh);
      log << "worker: the controller no longer knows this worker; registering again with a "
             "fresh credential\n";
      log.flush();
    };
    ASSIGN_OR_RETURN(controller, server::ControllerClient::Connect(
                                     client, [&relay](const proto::Assignment& assignment) {
                                       relay.OnAssignment(assignment.generation());
                                     }));
    log << "worker: RingPeer on " << address << " (" << options.security.Describe()
        << "), registered with the controller at " << client.controller << " as member "
        << controller->member_id() << ", metrics at " << worker.metrics_server->url() << "\n";
    assignments = std::make_unique<ControllerAssignments>(*controller, options.training.device);
  } else {
    log << WorkerName(options.cluster.rank) << ": static " << SyncModeName(options.cluster.mode)
        << " cluster, "
        << (worker.member != nullptr ? absl::StrCat("RingPeer on ", address, ", ring of ")
                                     : absl::StrCat(options.cluster.ps.size(), " shards, "))
        << WorldOf(options.cluster) << " workers, metrics at " << worker.metrics_server->url()
        << "\n";
    assignments = std::make_unique<FixedAssignment>(StaticAssignment(options));
  }
  log.flush();
  if (!options.outputs.ready_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(
        options.outputs.ready_file,
        ReadyFileText({worker.server.port, worker.metrics_server->port(), address})));
  }

  ElasticOptions training;
  training.device = options.training.device;
  training.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  training.timeout = options.timeout;
  training.regroup_timeout = options.elastic.regroup_timeout;
  training.security = options.security;
  training.stay_after_finish = elastic;
  if (options.testing.fault.has_value()) training.fault = KillSelfAt(*options.testing.fault);
  if (timeline != nullptr) training.timeline = timeline->timeline();
  if (evaluations.is_open()) {
    training.evaluations = [&evaluations](const EvaluationLine& point) {
      evaluations << EvaluationLineText(point) << "\n";
      evaluations.flush();
    };
  }
  ElasticTrainer trainer(*assignments, worker.member.get(), worker.metrics, training, log,
                         TraceTo(trace.is_open() ? &trace : nullptr, timeline.get(), log));
  relay.Attach(&trainer);
  bool finished = false;
  const absl::Status status = trainer.Run(signals.notification(), [&](const ElasticResult& result) {
    finished = true;
    // Before the result file: whoever waits for results finds the whole job's timeline.
    if (timeline != nullptr) {
      timeline->set_rank(result.slot.rank);
      RETURN_IF_ERROR(Annotate(timeline->Write(), "--timeline_file"));
    }
    return ReportResult(options, result, worker.metrics_server->port(), elastic, log);
  });
  relay.Attach(nullptr);
  if (timeline != nullptr) {  // regroups after the job, too
    if (absl::Status written = timeline->Write(); !written.ok()) {
      log << "worker: --timeline_file not written at exit: " << written << "\n";
    }
  }
  RETURN_IF_ERROR(status);
  if (elastic) return absl::OkStatus();
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

absl::Status RunWorker(const WorkerOptions& options, const TerminationSignals& signals,
                       std::ostream& log) {
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  return RunTrainingWorker(options, signals, log);
}

}  // namespace ringside::worker
