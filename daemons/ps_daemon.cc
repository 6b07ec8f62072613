#include "daemons/ps_daemon.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "control/controller_client.h"
#include "model/model_spec.h"
#include "prometheus/registry.h"
#include "ps/ps_service.h"
#include "ps/shard_state.h"

namespace ringside::server {

absl::Status ValidateShardOptions(const ShardOptions& options) {
  if (options.ps_shards < 1) return absl::InvalidArgumentError("--ps_shards must be >= 1");
  if (options.shard < 0 || options.shard >= options.ps_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard=", options.shard, " is not in [0, --ps_shards=", options.ps_shards, ")"));
  }
  if (!options.member.controller.empty()) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(options.member.controller).status(), "--controller"));
    return ReadJoinToken(options.member.join_token_file).status();
  }
  if (options.workers < 1) return absl::InvalidArgumentError("--workers must be >= 1");
  if (options.segment_bytes < 4 || options.segment_bytes > kMaxMessageBytes / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segment_bytes must be in [4, ", kMaxMessageBytes / 2, "]"));
  }
  if (options.elements < 0) return absl::InvalidArgumentError("--elements must be >= 0");
  if (options.elements > 0) return absl::OkStatus();
  return worker::ModelSpec::Parse(options.training.model, options.training.activation).status();
}

namespace {

// The whole initial parameter vector: the model's, or zeros for a benchmark shard.
absl::StatusOr<std::vector<float>> InitialVector(const ShardOptions& options) {
  if (options.elements > 0) return std::vector<float>(static_cast<size_t>(options.elements), 0.0f);
  ASSIGN_OR_RETURN(const worker::ModelSpec spec,
                   worker::ModelSpec::Parse(options.training.model, options.training.activation));
  return worker::InitialParameters(spec, options.training.seed);
}

}  // namespace

namespace {

ShardMetricsFactory MetricsFactoryOf(Metrics& metrics) {
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
  factory.steps.wait_seconds = &metrics.PsWaitSeconds();
  factory.steps.update_seconds = &metrics.StepSeconds(SyncMode::kPs, StepPhase::kUpdate);
  factory.steps.steps = &metrics.StepsTotal(SyncMode::kPs);
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

// Static: one generation, served from start to end.
absl::Status ServeStatic(const ShardOptions& options, Metrics& metrics,
                         ParameterShardService& service, const ShardMetricsFactory& factory,
                         ElementRange& range, std::ostream& log) {
  ASSIGN_OR_RETURN(const std::vector<float> all, InitialVector(options));
  range = EvenRanges(all.size(), options.ps_shards)[options.shard];
  ShardGeneration generation;
  ASSIGN_OR_RETURN(
      generation.state,
      ShardState::Create(ShardConfig{options.generation, options.workers, options.shard},
                         {all.begin() + range.begin, all.begin() + range.end},
                         options.training.optimizer, factory.steps));
  generation.links = factory.links(options.shard, options.workers);
  service.Serve(std::move(generation));
  metrics.ExportMembership(options.workers, options.generation, SyncMode::kPs);
  log << PsShardName(options.shard) << ": owns parameters [" << range.begin << ", " << range.end
      << ") of " << all.size() << "\n";
  return absl::OkStatus();
}

// Elastic: every assignment tells the shard its index and the job, which Loads must fit.
absl::Status FollowAssignment(const proto::Assignment& assignment, const ShardOptions& options,
                              Metrics& metrics, ParameterShardService& service, std::ostream& log) {
  if (assignment.shard() < 0) {
    return absl::InvalidArgumentError("the assignment gives this member no shard index");
  }
  ASSIGN_OR_RETURN(const worker::TrainingOptions training,
                   TrainingOptionsOf(assignment.job(), options.training.device));
  ASSIGN_OR_RETURN(const worker::ModelSpec spec,
                   worker::ModelSpec::Parse(training.model, training.activation));
  ASSIGN_OR_RETURN(const SyncMode mode, ParseSyncMode(assignment.mode()));
  const ElementRange range =
      EvenRanges(spec.parameter_count(), assignment.shards_size())[assignment.shard()];
  service.SetJob(ShardJob{assignment.shard(), range, training.optimizer});
  metrics.ExportMembership(assignment.ring_size(), assignment.generation(), mode);
  log << PsShardName(assignment.shard()) << ": generation " << assignment.generation() << ", "
      << assignment.mode() << " mode, " << assignment.ring_size() << " workers; owns parameters ["
      << range.begin << ", " << range.end << ") of " << spec.parameter_count() << "\n";
  log.flush();
  return absl::OkStatus();
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
  const ShardMetricsFactory factory = MetricsFactoryOf(metrics);
  ParameterShardService service(static_cast<uint64_t>(options.segment_bytes), factory);
  ElementRange range;
  if (!elastic) RETURN_IF_ERROR(ServeStatic(options, metrics, service, factory, range, log));
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}));
  ASSIGN_OR_RETURN(const std::string address,
                   AdvertisedAddress(options.member.advertise, options.listen, server.port));
  log << "ps: ParameterShard on " << address << ", metrics at " << metrics_server->url() << "\n";
  log.flush();
  std::unique_ptr<ControllerClient> controller;
  if (elastic) {
    ASSIGN_OR_RETURN(const std::string token, ReadJoinToken(options.member.join_token_file));
    ControllerClientOptions client;
    client.controller = options.member.controller;
    client.join_token = token;
    client.role = proto::ROLE_PS;
    client.address = address;
    client.register_timeout = options.member.register_timeout;
    ASSIGN_OR_RETURN(
        controller, ControllerClient::Connect(client, [&](const proto::Assignment& assignment) {
          const absl::Status status = FollowAssignment(assignment, options, metrics, service, log);
          if (!status.ok()) {
            log << "ps: cannot serve generation " << assignment.generation() << ": " << status
                << "\n";
          }
        }));
    log << "ps: registered with the controller at " << client.controller << " as member "
        << controller->member_id() << "\n";
    log.flush();
  }
  RETURN_IF_ERROR(WriteReady(options, server.port, metrics_server->port(), range));
  while (!signals.WaitFor(absl::Milliseconds(200))) {
    if (controller != nullptr && !controller->failure().ok()) return controller->failure();
  }
  std::shared_ptr<const ShardGeneration> last = service.current();
  log << "ps: stopping after step " << (last ? last->state->current_step() : 0) << "\n";
  return absl::OkStatus();
}

}  // namespace ringside::server
