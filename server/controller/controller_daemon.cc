#include "server/controller/controller_daemon.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/net.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "prometheus/registry.h"
#include "server/controller/checkpoint_keeper.h"
#include "server/controller/controller_service.h"
#include "server/controller/job_spec.h"
#include "server/controller/membership.h"
#include "server/controller/membership_record.h"

namespace ringside::server {
namespace {

void ExportTopology(const Topology& topology, Metrics& metrics) {
  metrics.ExportMembership(static_cast<int>(topology.workers.size()), topology.generation,
                           topology.mode);
}

}  // namespace
absl::Status RunController(const ControllerOptions& options, const TerminationSignals& signals,
                           std::ostream& log) {
  if (options.workers < 1 || options.ps_shards < 0) {
    return absl::InvalidArgumentError("--workers must be >= 1 and --ps_shards >= 0");
  }
  if (options.heartbeat_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat_timeout must be positive");
  }
  if (options.checkpoint_every < 0 ||
      (options.checkpoint_every > 0 && options.checkpoint_dir.empty())) {
    return absl::InvalidArgumentError(
        "--checkpoint_every must be >= 0, and > 0 only with a --checkpoint_dir to write to");
  }
  ASSIGN_OR_RETURN(const std::string token, ReadJoinToken(options.join_token_file));
  std::string operator_token;
  if (!options.operator_token_file.empty()) {
    ASSIGN_OR_RETURN(operator_token,
                     ReadTokenFile(options.operator_token_file, "--operator_token_file"));
  }
  MembershipConfig config{options.workers, options.ps_shards, token, options.heartbeat_timeout,
                          options.mode};
  Membership membership(config);
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  const proto::JobSpec job = JobSpecOf(options.training);
  const bool durable = !options.checkpoint_dir.empty();
  std::unique_ptr<CheckpointKeeper> checkpoints;
  if (durable) {
    ASSIGN_OR_RETURN(const ModelSpec model,
                     ModelSpec::Parse(options.training.model, options.training.activation));
    const uint64_t parameters = model.parameter_count();
    const CheckpointShape shape{parameters,
                                Optimizer::StateSize(options.training.optimizer.kind, parameters)};
    // Opening the keeper creates the directory and takes the newest intact checkpoint.
    ASSIGN_OR_RETURN(checkpoints,
                     CheckpointKeeper::Open(options.checkpoint_dir, job.SerializeAsString(), shape,
                                            &metrics, log));
    ASSIGN_OR_RETURN(std::optional<MembershipRecord> record,
                     LoadMembershipRecord(options.checkpoint_dir));
    if (record.has_value()) {
      RETURN_IF_ERROR(Annotate(membership.Restore(*record, absl::Now()),
                               MembershipRecordPath(options.checkpoint_dir)));
      log << "controller: resumed generation " << record->topology.generation << " with "
          << record->members.size() << " members from "
          << MembershipRecordPath(options.checkpoint_dir) << "\n";
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  ControllerService service(membership, job, options.heartbeat_timeout, log);
  service.SetOperatorToken(operator_token);
  if (checkpoints != nullptr) {
    service.EnableCheckpoints(checkpoints.get(), static_cast<uint64_t>(options.checkpoint_every));
  }
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}, options.security));
  ExportTopology(membership.topology(), metrics);
  log << "controller: serving on " << ParseHostPort(options.listen)->host << ":" << server.port
      << " (" << options.security.Describe() << "), waiting for " << options.workers
      << " workers and " << options.ps_shards << " shards, metrics at " << metrics_server->url()
      << "\n";
  log.flush();
  if (!options.ready_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(
        options.ready_file, ReadyFileText({server.port, metrics_server->port(), /*address=*/""})));
  }
  // The main thread expires silent members every quarter of the timeout and, after every change
  // of the membership (a registration, a mode switch, an expiry), saves the record before it
  // pushes and logs the new generation.
  uint64_t exported_generation = 0;
  uint64_t saved_version = 0;
  absl::Time next_expiry = absl::Now() + options.heartbeat_timeout / 4;
  while (!signals.received()) {
    const uint64_t version = membership.AwaitChange(
        saved_version, std::min(next_expiry, absl::Now() + absl::Milliseconds(200)));
    std::vector<uint64_t> dropped;
    if (absl::Now() >= next_expiry) {
      dropped = membership.Expire(absl::Now());
      next_expiry = absl::Now() + options.heartbeat_timeout / 4;
    }
    for (uint64_t id : dropped) {
      log << "controller: dropped member " << id << " (silent for " << options.heartbeat_timeout
          << ")\n";
    }
    if (durable && membership.version() != saved_version) {
      saved_version = membership.version();
      if (absl::Status saved = SaveMembershipRecord(options.checkpoint_dir, membership.Record());
          !saved.ok()) {
        log << "controller: cannot save the membership record (a restarted controller would "
               "lose the job's members): "
            << saved << "\n";
      }
    } else {
      saved_version = version;
    }
    const Topology topology = membership.topology();
    if (!dropped.empty() || topology.generation != exported_generation) {
      exported_generation = topology.generation;
      ExportTopology(topology, metrics);
      service.Notify();
      log << "controller: generation " << topology.generation << ", " << topology.workers.size()
          << " workers, " << topology.shards.size() << " shards, mode "
          << SyncModeName(topology.mode) << "\n";
      if (topology.mode == SyncMode::kPs && topology.shards.empty() && topology.generation > 0) {
        log << "controller: ps mode has no shard left; the workers wait for a shard to register "
               "(or for `ringside ctl mode ring`)\n";
      }
      log.flush();
    }
  }
  return absl::OkStatus();
}

}  // namespace ringside::server
